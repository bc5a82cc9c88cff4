"""Word-level language model (after pytorch/examples word_language_model) on a generated corpus.

    python main.py --cuda --epochs 1
"""
import argparse
import math

import torch
import torch.nn as nn

import data
import model

parser = argparse.ArgumentParser(description='PyTorch word-level LSTM language model')
parser.add_argument('--model', type=str, default='LSTM')
parser.add_argument('--emsize', type=int, default=32)
parser.add_argument('--nhid', type=int, default=32)
parser.add_argument('--nlayers', type=int, default=2)
parser.add_argument('--lr', type=float, default=20)
parser.add_argument('--clip', type=float, default=0.25)
parser.add_argument('--epochs', type=int, default=1)
parser.add_argument('--batch_size', type=int, default=8, metavar='N')
parser.add_argument('--bptt', type=int, default=12)
parser.add_argument('--dropout', type=float, default=0.2)
parser.add_argument('--tied', action='store_true')
parser.add_argument('--seed', type=int, default=1111)
parser.add_argument('--cuda', action='store_true', help='use CUDA')
parser.add_argument('--log-interval', type=int, default=4)
parser.add_argument('--save', type=str, default='', help='path to save the final model')
args = parser.parse_args()

# Set the random seed manually for reproducibility.
torch.manual_seed(args.seed)
if torch.cuda.is_available():
    if not args.cuda:
        print("WARNING: You have a CUDA device, so you should probably run with --cuda")
    else:
        torch.cuda.manual_seed(args.seed)
args.cuda = args.cuda and torch.cuda.is_available()
print('cuda {} devices {}'.format(args.cuda, torch.cuda.device_count()))

device = torch.device("cuda" if args.cuda else "cpu")

corpus = data.Corpus()


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    data = data.view(bsz, -1).t().contiguous()
    return data.to(device)


eval_batch_size = 4
train_data = batchify(corpus.train, args.batch_size)
val_data = batchify(corpus.valid, eval_batch_size)
test_data = batchify(corpus.test, eval_batch_size)

ntokens = len(corpus.dictionary)
model = model.RNNModel(args.model, ntokens, args.emsize, args.nhid, args.nlayers, args.dropout, args.tied)
if args.cuda:
    model.cuda()

criterion = nn.NLLLoss()


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    if args.cuda:
        data, target = data.cuda(), target.cuda()
    return data, target


def evaluate(data_source):
    model.eval()
    total_loss = 0.
    hidden = model.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


def train():
    model.train()
    total_loss = 0.
    hidden = model.init_hidden(args.batch_size)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()

        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)

        total_loss += loss.item()
        print('epoch {} batch {} loss {!r}'.format(epoch, batch, loss.item()))
        if batch % args.log_interval == 0 and batch > 0:
            cur_loss = total_loss / args.log_interval
            print('| lr {:02.2f} | ppl {:8.2f}'.format(lr, math.exp(cur_loss)))
            total_loss = 0


lr = args.lr
best_val_loss = None
for epoch in range(1, args.epochs + 1):
    train()
    val_loss = evaluate(val_data)
    print('end of epoch {} valid loss {!r}'.format(epoch, val_loss))
    if not best_val_loss or val_loss < best_val_loss:
        if args.save:
            with open(args.save, 'wb') as f:
                torch.save(model, f)
        best_val_loss = val_loss
    else:
        lr /= 4.0

if args.save:
    with open(args.save, 'rb') as f:
        model = torch.load(f, weights_only=False)
        model.rnn.flatten_parameters()

test_loss = evaluate(test_data)
print('end of training test loss {!r}'.format(test_loss))
