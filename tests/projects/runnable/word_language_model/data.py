import random

import torch

WORDS = ('the cat dog bird sat ran flew on under over a mat log tree and then quickly slowly '
         'big small red green saw heard it them').split()


class Dictionary(object):
    def __init__(self):
        self.word2idx = {}
        self.idx2word = []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


def generated_lines(count, seed):
    """Sentences from a tiny grammar: the corpus is generated, not downloaded."""
    rng = random.Random(seed)
    for _ in range(count):
        words = ['the', rng.choice(WORDS[1:4]), rng.choice(WORDS[4:7]), rng.choice(WORDS[7:10]),
                 'the', rng.choice(WORDS[10:14])]
        if rng.random() < 0.3:
            words += ['and', 'then', rng.choice(WORDS[16:18]), rng.choice(WORDS[4:7])]
        yield ' '.join(words)


class Corpus(object):
    def __init__(self, seed=0):
        self.dictionary = Dictionary()
        self.train = self.tokenize(generated_lines(300, seed))
        self.valid = self.tokenize(generated_lines(40, seed + 1))
        self.test = self.tokenize(generated_lines(40, seed + 2))

    def tokenize(self, lines):
        """Tokenizes the lines, adding every word to the dictionary."""
        idss = []
        for line in lines:
            words = line.split() + ['<eos>']
            ids = [self.dictionary.add_word(word) for word in words]
            idss.append(torch.tensor(ids).type(torch.int64))
        return torch.cat(idss)
