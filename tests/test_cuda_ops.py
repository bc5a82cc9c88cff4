"""Custom CUDA/C++ operators: reading the bindings, the extension declarations, and matching
Python calls to them by the module they go into (not by name suffix: the reference's bug B28)."""

import textwrap
from pathlib import Path

import pytest

from gpu2npu.apis.cuda_ops import (
    CudaOp,
    Extension,
    find_extensions,
    inline_ops,
    ops_for_call,
    parse_cpp_ops,
    read_cpp_ops,
)

ROOT = Path(__file__).resolve().parent / "fixtures_cpp"
CPP_FILES = ["csrc/ops.cpp", "csrc/kernels.cu", "csrc/jit_ops.cpp", "legacy/legacy_ops.cpp"]

PYBIND_OPS = [
    CudaOp("csrc/ops.cpp", 37, "my_add", "pybind11", 2, 2),  # definition wins over the stale prototype
    CudaOp("csrc/ops.cpp", 38, "forward", "pybind11", 4, 4),  # template commas do not count
    CudaOp("csrc/ops.cpp", 39, "scale", "pybind11", 1, 2),  # py::arg("factor") = 2.0
    CudaOp("csrc/ops.cpp", 42, "lambda_op", "pybind11", 3, 3),
    CudaOp("csrc/ops.cpp", 44, "Conv", "pybind11", 2, 2),  # py::init<int64_t, int64_t>()
    CudaOp("csrc/ops.cpp", 45, "Conv.forward", "pybind11", 1, 1),  # &Conv::forward: `this` is implicit
    CudaOp("csrc/ops.cpp", 46, "Conv.reset", "pybind11", 0, 1),  # free function taking Conv& self
]
LIBRARY_OPS = [
    CudaOp("csrc/kernels.cu", 19, "myops.fused_gelu", "torch_library", 1, 2),
    CudaOp("csrc/kernels.cu", 20, "myops.scaled_add", "torch_library", 2, 3),  # '*' is no parameter
    CudaOp("csrc/kernels.cu", 21, "myops.identity", "torch_library", 1, 1),  # from the lambda
    CudaOp("csrc/kernels.cu", 27, "myops.only_impl", "torch_library", 0, -1),  # impl without a def
]
JIT_OPS = [CudaOp("csrc/jit_ops.cpp", 5, "double_it", "pybind11", 1, 1)]
LEGACY_OPS = [
    CudaOp("legacy/legacy_ops.cpp", 9, "math.add", "pybind11", 1, 2, "legacy_ops"),
    CudaOp("legacy/legacy_ops.cpp", 10, "add", "pybind11", 2, 2, "legacy_ops"),
    CudaOp("legacy/legacy_ops.cpp", 13, "noop", "pybind11", 0, 0, "legacy_extra"),
]
SETUP_EXTENSIONS = [
    Extension("my_ext", "setup.py", 10, ("csrc/ops.cpp", "csrc/kernels.cu"), "CUDAExtension", ""),
    Extension("my_pkg._cpu", "setup.py", 11, ("csrc/cpu_only.cpp",), "CppExtension", ""),
]
TRAIN_EXTENSIONS = [
    Extension("jit_ext", "train.py", 11, ("csrc/jit_ops.cpp",), "load", "jit"),
    Extension("inline_ext", "train.py", 12, (), "load_inline", "inline"),
]
INLINE_OPS = [CudaOp("train.py", 12, "scale_inline", "pybind11", 2, 2)]


def fixture_text(rel):
    return (ROOT / rel).read_text()


@pytest.fixture(scope="module")
def project():
    ops, skipped = read_cpp_ops(ROOT, CPP_FILES)
    assert skipped == []
    ops = sorted(ops + inline_ops(fixture_text("train.py"), "train.py"))
    extensions = find_extensions(fixture_text("setup.py"), "setup.py") + find_extensions(
        fixture_text("train.py"), "train.py"
    )
    return ops, extensions


def match(project, api, n_args, keywords=()):
    ops, extensions = project
    return ops_for_call(api, n_args, keywords, ops, extensions)


def op_named(name, file=None):
    every = PYBIND_OPS + LIBRARY_OPS + JIT_OPS + LEGACY_OPS + INLINE_OPS
    (op,) = [op for op in every if op.name == name and (file is None or op.file == file)]
    return op


# -- C++ parsing -------------------------------------------------------------------------------


def test_pybind_module_defs_classes_and_arities():
    assert parse_cpp_ops(fixture_text("csrc/ops.cpp"), "csrc/ops.cpp") == PYBIND_OPS


def test_torch_library_schemas_and_impl_without_def():
    assert parse_cpp_ops(fixture_text("csrc/kernels.cu"), "csrc/kernels.cu") == LIBRARY_OPS


def test_literal_module_names_submodules_and_two_modules_in_a_file():
    assert parse_cpp_ops(fixture_text("legacy/legacy_ops.cpp"), "legacy/legacy_ops.cpp") == LEGACY_OPS


def test_read_cpp_ops_parses_the_listed_cpp_files_sorted():
    ops, skipped = read_cpp_ops(ROOT, CPP_FILES + ["setup.py"])  # not a C++ file: ignored
    assert ops == sorted(PYBIND_OPS + LIBRARY_OPS + JIT_OPS + LEGACY_OPS)
    assert skipped == []


def test_commented_and_quoted_bindings_are_ignored():
    text = textwrap.dedent(
        """\
        // PYBIND11_MODULE(a, m) { m.def("line_comment", &f); }
        /* PYBIND11_MODULE(b, m) {
             m.def("block_comment", &f); } */
        const char* doc = "PYBIND11_MODULE(c, m) { m.def(\\"in_string\\", &f); }";
        const char* raw = R"x(PYBIND11_MODULE(d, m) { m.def("in_raw_string", &f); })x";
        #define BIND(m) m.def("in_macro", &f)
        """
    )
    assert parse_cpp_ops(text, "a.cpp") == []


def test_declarations_spanning_lines_nested_blocks_and_overload_cast():
    text = textwrap.dedent(
        """\
        at::Tensor f(at::Tensor x, int k);
        at::Tensor f(at::Tensor x);
        PYBIND11_MODULE(TORCH_EXTENSION_NAME,
                        m)
        {
          m.def(
              "f_one",
              py::overload_cast<at::Tensor>(&f));
          #ifdef WITH_CUDA
          {
            m.def("f_any",
                  &f);  // both overloads: the widest bounds
          }
          #endif
          if (true) { m.def("varargs", [](py::args args) { return 0; }); }
          m.def("kw", [](int a, py::kwargs kw) { return a; }, "a"_a);
          m.def("unknown", &declared_elsewhere);
        }
        """
    )
    assert parse_cpp_ops(text, "m.cpp") == [
        CudaOp("m.cpp", 6, "f_one", "pybind11", 1, 1),
        CudaOp("m.cpp", 11, "f_any", "pybind11", 1, 2),
        CudaOp("m.cpp", 15, "varargs", "pybind11", 0, -1),
        CudaOp("m.cpp", 16, "kw", "pybind11", 1, -1),
        CudaOp("m.cpp", 17, "unknown", "pybind11", 0, -1),
    ]


def test_class_bindings_held_in_variables_static_methods_and_factory_init():
    text = textwrap.dedent(
        """\
        struct Pool { at::Tensor run(at::Tensor x, int k) { return x; } static int make(int a, int b); };
        PYBIND11_MODULE(pools, m) {
          auto cls = py::class_<Pool, std::shared_ptr<Pool>>(m, "Pool");
          cls.def(py::init<int, int>(), py::arg("n"), py::arg("k") = 1)
             .def("run", &Pool::run);
          py::class_<Other> other(m, "Other");
          other.def_static("make", &Pool::make).def(py::init([](int a) { return Other(); }));
          other.def("__add__", [](const Other& self, const Other& o) { return self; });
          other.def(py::self + py::self);
        }
        """
    )
    assert parse_cpp_ops(text, "p.cpp") == [
        CudaOp("p.cpp", 4, "Pool", "pybind11", 1, 2, "pools"),
        CudaOp("p.cpp", 5, "Pool.run", "pybind11", 2, 2, "pools"),
        CudaOp("p.cpp", 7, "Other", "pybind11", 1, 1, "pools"),
        CudaOp("p.cpp", 7, "Other.make", "pybind11", 2, 2, "pools"),  # static: no self
        CudaOp("p.cpp", 8, "Other.__add__", "pybind11", 1, 1, "pools"),  # lambda's self parameter dropped
    ]


def test_library_def_by_name_with_function_and_fragment_blocks():
    text = textwrap.dedent(
        """\
        at::Tensor twice(const at::Tensor& x, double f) { return x * f; }
        TORCH_LIBRARY_FRAGMENT(extra, m) {
          m.def("twice", twice);
          m.def(TORCH_SELECTIVE_SCHEMA("extra::pick.int(Tensor[] xs, int i) -> Tensor"));
          m.class_<Holder>("Holder").def("get", &Holder::get);
        }
        """
    )
    assert parse_cpp_ops(text, "x.cu") == [
        CudaOp("x.cu", 3, "extra.twice", "torch_library", 2, 2),
        CudaOp("x.cu", 4, "extra.pick.int", "torch_library", 2, 2),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "PYBIND11_MODULE(",
        "PYBIND11_MODULE(x, m) { m.def(",
        'PYBIND11_MODULE(x, m) { m.def("a", &f, py::arg("x") = ); }}}}',
        'TORCH_LIBRARY(ns, m) { m.def("broken(Tensor x -> Tensor"); m.impl(',
        'py::class_<A(m, "A").def(py::init<int>(); } ) ] >>> <<<',
        'R"x(unterminated raw',
        "(((((" * 2000 + "{" * 2000,
    ],
)
def test_nonsense_never_raises(text):
    assert isinstance(parse_cpp_ops(text, "bad.cpp"), list)


def test_every_truncation_of_the_fixtures_parses():
    for rel in CPP_FILES:
        text = fixture_text(rel)
        for cut in range(0, len(text), 5):
            assert isinstance(parse_cpp_ops(text[:cut], rel), list)


def test_undecodable_and_missing_files_are_reported_not_raised(tmp_path):
    (tmp_path / "bad.cpp").write_bytes(b"// \xff\xfe latin-1 comment\nint f();\n")
    (tmp_path / "good.cu").write_text('PYBIND11_MODULE(good, m) { m.def("g", [](int a) { return a; }); }\n')
    ops, skipped = read_cpp_ops(tmp_path, ["bad.cpp", "missing.cc", "good.cu"])
    assert ops == [CudaOp("good.cu", 1, "g", "pybind11", 1, 1, "good")]
    assert [rel for rel, _ in skipped] == ["bad.cpp", "missing.cc"]
    assert "UTF-8" in skipped[0][1] and "read" in skipped[1][1]


# -- Python declarations -------------------------------------------------------------------------


def test_setup_py_extensions_through_alias_and_module_prefix():
    assert find_extensions(fixture_text("setup.py"), "setup.py") == SETUP_EXTENSIONS


def test_load_and_load_inline_record_their_variable_and_skip_torch_load():
    assert find_extensions(fixture_text("train.py"), "train.py") == TRAIN_EXTENSIONS


def test_extension_spellings():
    source = textwrap.dedent(
        """\
        import os
        import torch.utils.cpp_extension as ce
        from torch.utils.cpp_extension import *
        HERE = os.path.dirname(__file__)
        NAME = "named"
        a = ce.CUDAExtension(name=NAME, sources=[os.path.join(HERE, "k.cu")] + ["m.cpp"])
        b = CppExtension("plain", sources=glob.glob("*.cpp"))
        self.ext = torch.utils.cpp_extension.load("dotted", ["x.cpp"])
        json.load(open("f"))
        """
    )
    assert find_extensions(source, "pkg/build.py") == [
        Extension("named", "pkg/build.py", 6, ("k.cu", "m.cpp"), "CUDAExtension", ""),
        Extension("plain", "pkg/build.py", 7, (), "CppExtension", ""),
        Extension("dotted", "pkg/build.py", 8, ("x.cpp",), "load", "self.ext"),
    ]


def test_bare_load_is_not_an_extension_without_its_import():
    assert find_extensions("from json import load\nx = load(name='a', sources=['b.cpp'])\n", "a.py") == []


def test_syntax_errors_give_no_extensions():
    assert find_extensions("def broken(:\n", "setup.py") == []
    assert inline_ops("def broken(:\n", "setup.py") == []


def test_inline_ops_take_arity_from_literal_cpp_sources():
    assert inline_ops(fixture_text("train.py"), "train.py") == INLINE_OPS


def test_inline_ops_with_unknown_source_and_inline_pybind_module():
    source = textwrap.dedent(
        '''\
        from torch.utils.cpp_extension import load_inline
        a = load_inline("a", cpp_sources=read_source(), functions={"f": "doc", "g": "doc"})
        b = load_inline(
            "b",
            cpp_sources="""
        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("h", [](int x) { return x; }); }
        """,
        )
        '''
    )
    assert inline_ops(source, "jit.py") == [
        CudaOp("jit.py", 2, "f", "pybind11", 0, -1),
        CudaOp("jit.py", 2, "g", "pybind11", 0, -1),
        CudaOp("jit.py", 6, "h", "pybind11", 1, 1),
    ]


# -- matching Python calls -------------------------------------------------------------------------


def test_exact_matches_through_extension_module_and_load_variable(project):
    assert match(project, "my_ext.my_add", 2) == op_named("my_add")
    assert match(project, "my_ext.Conv", 2) == op_named("Conv")
    assert match(project, "jit.double_it", 1) == op_named("double_it")
    assert match(project, "jit_ext.double_it", 1) == op_named("double_it")
    assert match(project, "inline.scale_inline", 2) == op_named("scale_inline")
    assert match(project, "torch.ops.myops.fused_gelu", 1) == op_named("myops.fused_gelu")
    assert match(project, "torch.ops.myops.fused_gelu.default", 1) == op_named("myops.fused_gelu")
    assert match(project, "torch.ops.myops.only_impl", 7) == op_named("myops.only_impl")


def test_b28_same_name_on_another_module_is_not_an_op(project):
    assert match(project, "my_ext.forward", 4) == op_named("forward")
    assert match(project, "x.forward", 4) is None
    assert match(project, "model.forward", 2) is None
    assert match(project, "forward", 4) is None
    assert match(project, "other_ext.my_add", 2) is None
    assert match(project, "torch.ops.other.fused_gelu", 1) is None
    assert match(project, "jit.my_add", 2) is None  # jit_ext does not build ops.cpp


def test_arity_out_of_bounds_is_no_match(project):
    assert match(project, "my_ext.my_add", 3) is None
    assert match(project, "my_ext.my_add", 1) is None
    assert match(project, "my_ext.scale", 3) is None
    assert match(project, "torch.ops.myops.scaled_add", 1) is None


def test_call_relying_on_a_default_argument_matches(project):
    assert match(project, "my_ext.scale", 1) == op_named("scale")
    assert match(project, "torch.ops.myops.fused_gelu", 1) == op_named("myops.fused_gelu")


def test_keyword_arguments_count_toward_the_total(project):
    assert match(project, "my_ext.scale", 1, (("factor", "3.0"),)) == op_named("scale")
    assert match(project, "my_ext.scale", 2, (("extra", "1"),)) is None
    assert match(project, "torch.ops.myops.scaled_add", 2, (("alpha", "0.5"),)) == op_named(
        "myops.scaled_add"
    )
    assert match(project, "my_ext.my_add", 0, ("a", "b")) == op_named("my_add")  # bare keyword names
    # **kwargs may hold anything: only the known count must not exceed the bound.
    assert match(project, "my_ext.my_add", 1, (("**", "kw"),)) == op_named("my_add")
    assert match(project, "my_ext.my_add", 3, (("**", "kw"),)) is None


def test_literal_module_name_applies_when_no_extension_builds_the_file(project):
    assert match(project, "legacy_ops.math.add", 1) == op_named("math.add")
    assert match(project, "legacy_ops.add", 2) == op_named("add")
    assert match(project, "legacy_extra.noop", 0) == op_named("noop")
    assert match(project, "my_ext.add", 2) is None
    assert match(project, "legacy_extra.add", 2) is None


def test_extension_module_name_stands_for_torch_extension_name():
    ops = parse_cpp_ops(
        'TORCH_LIBRARY(TORCH_EXTENSION_NAME, m) { m.def("op(Tensor x) -> Tensor"); }', "csrc/lib.cpp"
    )
    extension = Extension("pkg._lib", "tools/setup.py", 3, ("../csrc/lib.cpp",), "CUDAExtension", "")
    assert ops_for_call("torch.ops._lib.op", 1, (), ops, [extension]) == ops[0]
    assert ops_for_call("torch.ops.pkg._lib.op", 1, (), ops, [extension]) is None


def test_sources_compared_by_basename_when_paths_differ():
    text = 'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("f", [](int a) { return a; }); }'
    (op,) = parse_cpp_ops(text, "src/ext/f.cu")
    elsewhere = Extension("fext", "setup.py", 1, ("f.cu",), "CUDAExtension", "")
    other = Extension("gext", "setup.py", 2, ("g.cu",), "CUDAExtension", "")
    assert ops_for_call("fext.f", 1, (), [op], [other, elsewhere]) == op
    assert ops_for_call("gext.f", 1, (), [op], [other, elsewhere]) is None
    # An extension building it is known: its module is the only name (no TORCH_EXTENSION_NAME literal).
    assert ops_for_call("f.f", 1, (), [op], [elsewhere]) is None


def test_an_op_several_versions_build_is_the_one_the_calling_file_builds():
    """RWKV-LM: RWKV-v5/ and RWKV-v7/train_temp/ each load a wind_backstepping op of their own (bf16,
    fp32) from cuda/ relative to where they run; RWKV-v5/src/model.py's wkv5 op is also in
    RWKV-v4neo/. A call goes into the op of its own file's load(), else the nearest one."""
    text = 'TORCH_LIBRARY(wind_backstepping, m) { m.def("forward(Tensor w) -> Tensor"); }'
    files = [
        "RWKV-v5/cuda/wkv7_op.cpp",
        "RWKV-v7/train_temp/cuda/wkv7_op_fp32.cpp",
        "RWKV-v8/cuda/wkv7_op.cpp",
    ]
    ops = [op for file in files for op in parse_cpp_ops(text, file)]
    loads = [
        Extension("", "RWKV-v7/train_temp/train.py", 3, ("cuda/wkv7_op_fp32.cpp",), "load", ""),
        Extension("", "RWKV-v8/run.py", 3, ("cuda/wkv7_op.cpp",), "load", ""),
    ]
    call = "torch.ops.wind_backstepping.forward"
    assert ops_for_call(call, 1, (), ops, loads, "RWKV-v7/train_temp/train.py").file == files[1]
    assert ops_for_call(call, 1, (), ops, loads, "RWKV-v8/run.py").file == files[2]  # beside it
    assert ops_for_call(call, 1, (), ops, loads, "RWKV-v5/src/model.py").file == files[0]  # nearest
    assert ops_for_call(call, 1, (), ops, loads).file == files[0]  # no caller: the first


def test_an_extension_class_chosen_into_a_variable():
    """detectron2's setup.py: ``extension = CppExtension`` or ``CUDAExtension``, then
    ``extension("detectron2._C", sources, ...)``."""
    source = textwrap.dedent(
        """\
        from torch.utils.cpp_extension import CppExtension, CUDAExtension
        def get_extensions():
            extension = CppExtension
            if with_cuda:
                extension = CUDAExtension
            return [extension("detectron2._C", ["vision.cpp"])]
        """
    )
    assert find_extensions(source, "setup.py") == [
        Extension("detectron2._C", "setup.py", 6, ("vision.cpp",), "CUDAExtension", "")
    ]
