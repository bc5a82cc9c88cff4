"""The command line: parse flags, build one options value, map errors to exit codes.

Exit codes: 0 success; 1 the run finished but the tool failed on some file (a bug, reported
in skipped_files.csv); 2 a usage, input or rule-file error (one line on stderr).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Optional, Tuple

import click

from gpu2npu import __version__
from gpu2npu.errors import ESCAPE_BYTES, UserError
from gpu2npu.modes import modes as analyse_modes
from gpu2npu.options import OutputOptions, ProjectOptions
from gpu2npu.styles import styles as migration_modes
from gpu2npu.targets import targets as migration_targets
from gpu2npu.versions import default_version, known_versions, resolve_version

MIGRATION_MODES = [style.name for style in migration_modes()]  # the default first
MIGRATION_TARGETS = [target.name for target in migration_targets()]  # the default first


class Gpu2NpuGroup(click.Group):
    """Turns UserError into one clear line and exit code 2; other errors are bugs."""

    def invoke(self, ctx):
        _escape_unencodable_output()
        _terminated.pid = os.getpid()
        signal.signal(signal.SIGTERM, _terminated)
        try:
            return super().invoke(ctx)
        except UserError as exc:
            click.echo(f"gpu2npu: error: {exc}", err=True)
            sys.exit(exc.exit_code)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise  # click's own usage errors (exit 2), --help and the like
        except KeyboardInterrupt:
            click.echo("gpu2npu: interrupted; nothing was written", err=True)
            sys.exit(130)
        except Terminated:
            click.echo("gpu2npu: terminated; nothing was written", err=True)
            sys.exit(143)
        except Exception as exc:
            if ctx.params.get("debug"):
                raise
            click.echo(
                f"gpu2npu: internal error: {type(exc).__name__}: {exc}; rerun with --debug and report it",
                err=True,
            )
            sys.exit(1)


class Terminated(BaseException):
    """SIGTERM, raised where the program is, so that the temporary tree is removed on the way out."""


def _terminated(signum, frame):
    if os.getpid() != _terminated.pid:
        # A worker that the pool stops right after forking, before it set SIGTERM back to the
        # default: die as the default would, without a traceback from inside the fork.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    raise Terminated()


_terminated.pid = None


def _escape_unencodable_output() -> None:
    """A file name that is not valid UTF-8 is printed with its bytes escaped, never a crash."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=ESCAPE_BYTES)


@click.group(cls=Gpu2NpuGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gpu2npu")
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
def main(debug: bool) -> None:
    """Migrate PyTorch CUDA training code to Ascend NPU (torch_npu)."""


def version_option(function):
    return click.option(
        "-v",
        "--version",
        "version",
        default=None,
        metavar="VERSION",
        help=f"Target torch version: {', '.join(known_versions())} (or 2.1, 2.7, ...). Default: the newest.",
    )(function)


def input_option(help_text: str, required: bool = True):
    return click.option(
        "-i", "--input", "input_path", required=required, type=click.Path(path_type=Path), help=help_text
    )


def output_option(suffix: str, required: bool = True):
    return click.option(
        "-o",
        "--output",
        "output_path",
        required=required,
        type=click.Path(path_type=Path),
        help=f"Directory that receives <name>{suffix}/ (created if missing).",
    )


def rule_option(help_text: str):
    return click.option("-r", "--rule", "rule_files", multiple=True, metavar="FILE", help=help_text)


def force_option(suffix: str):
    return click.option("--force", is_flag=True, help=f"Replace an existing <name>{suffix} output.")


SPECIFY_DEVICE = "specify-device"


def target_option(function):
    return click.option(
        "--target",
        type=click.Choice(MIGRATION_TARGETS),
        default=MIGRATION_TARGETS[0],
        show_default=True,
        help="; ".join(f"{target.name}: {target.help}" for target in migration_targets()) + ".",
    )(function)


def style_options(function):
    """--target, --mode, -s, --entry and --optimize, shared by migrate and check."""
    function = click.option(
        "--optimize",
        "optimize",
        is_flag=False,
        flag_value="safe",
        default=None,
        metavar="[all|ID,...]",
        help="Also apply the NPU performance changes of rules/optimize: alone, those that keep the "
        "numbers (exact, tolerance); =all, those that change training behaviour too; =ID,ID, those rules.",
    )(function)
    function = target_option(function)
    function = click.option(
        "--entry",
        "entries",
        multiple=True,
        type=click.Path(path_type=Path),
        metavar="FILE",
        help="--mode auto or specify-device: the script that starts the training (default: found); "
        "repeat for several. --mode distributed: the main script.",
    )(function)
    function = click.option(
        "-s",
        "--specify-device",
        is_flag=True,
        help=f"Same as --mode {SPECIFY_DEVICE} (msFmkTransplt's -s).",
    )(function)
    return click.option(
        "--mode",
        "style",
        type=click.Choice(MIGRATION_MODES),
        default=MIGRATION_MODES[0],
        show_default=True,
        help="; ".join(f"{style.name}: {style.help}" for style in migration_modes()) + ".",
    )(function)


def selection_options(function):
    """--include, --exclude and --no-default-excludes: which files of the input a run takes."""
    function = click.option(
        "--no-default-excludes",
        "take_everything",
        is_flag=True,
        help="Also take version control, virtual environment, cache and build output folders.",
    )(function)
    function = click.option(
        "--exclude",
        "excludes",
        multiple=True,
        metavar="GLOB",
        help="Leave files matching GLOB (gitignore syntax) alone: copied as they are, not "
        "migrated or checked; repeat for several.",
    )(function)
    return click.option(
        "--include",
        "includes",
        multiple=True,
        metavar="GLOB",
        help="Only migrate or check files matching GLOB (gitignore syntax); repeat for several.",
    )(function)


def _optimize_choice(value: Optional[str]) -> Tuple[str, ...]:
    """--optimize as ProjectOptions.optimize: () off, ("safe",), ("all",) or rule ids."""
    if value is None:
        return ()
    return tuple(part.strip() for part in value.split(",") if part.strip()) or ("safe",)


def _selection(includes, excludes, take_everything, prefix: str = ""):
    from gpu2npu.source.selection import Selection

    return Selection(tuple(includes), tuple(excludes), not take_everything, prefix)


jobs_option = click.option(
    "-j", "--jobs", default=0, type=click.IntRange(min=0), help="Worker processes (default: all cores)."
)


def cache_options(function):
    """--no-cache and --cache-dir, read into one value: the cache folder, or None (no cache)."""
    function = click.option(
        "--cache-dir",
        type=click.Path(path_type=Path),
        help="Folder of the per-file result cache (default: $GPU2NPU_CACHE_DIR, else "
        "$XDG_CACHE_HOME/gpu2npu or ~/.cache/gpu2npu).",
    )(function)
    return click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache.")(function)


def _cache_folder(no_cache: bool, cache_dir) -> "Path | None":
    from gpu2npu.project.cache import default_directory

    if no_cache and cache_dir is not None:
        raise click.UsageError("--no-cache and --cache-dir contradict each other: pass one of them")
    return None if no_cache else (cache_dir or default_directory())


def _style_for(style: str, specify_device: bool) -> str:
    """-s is --mode specify-device; with another --mode it is a contradiction."""
    if not specify_device:
        return style
    if style not in (MIGRATION_MODES[0], SPECIFY_DEVICE):
        raise UserError(f"-s and --mode {style} contradict each other", "give one of them")
    return SPECIFY_DEVICE


def _entries_for(style: str, entries) -> tuple:
    """--entry only means something to a mode that inserts into entry scripts."""
    from gpu2npu.styles import style_named

    if entries and not style_named(style).entry_scripts:
        raise UserError(
            f"--entry is not used by --mode {style}", f"drop --entry or use --mode auto or {SPECIFY_DEVICE}"
        )
    return tuple(entries)


def chosen_version(text, announce: bool = True) -> str:
    """The -v version; without -v the newest, said on stderr by the commands that run on a tree."""
    if text is None:
        version = default_version()
        if announce:
            click.echo(f"gpu2npu: target torch {version} (the newest; choose another with -v)", err=True)
        return version
    return resolve_version(text)


MIGRATE_EXAMPLES = """\b
Modes, one change each:
  full (default)       x = x.cuda(0)        ->  x = x.npu(0)
  --mode auto          (entry script)       +   import torch_npu
                                            +   from torch_npu.contrib import transfer_to_npu
  -s                   x = x.to('cuda:0')   ->  x = x.to(f'npu:{DEVICE_ID}')   ($DEVICE_ID)
  distributed -m MAIN  model = model.cuda() ->  model = model.npu()
                                            +   model = DistributedDataParallel(model, ...)
  every mode           DataParallel(model)  ->  model
"""


# -i and -o are checked in the callbacks, so that `migrate distributed --help` works without them.
@main.group(
    invoke_without_command=True,
    subcommand_metavar="[distributed -m MAIN [-t MODEL]]",
    epilog=MIGRATE_EXAMPLES,
)
@input_option("Project directory or single .py file.  [required]", required=False)
@output_option("_msft", required=False)
@version_option
@rule_option("Extra rule file (JSON or YAML); repeat for several.")
@click.option(
    "--disable-rule",
    "disabled",
    multiple=True,
    metavar="ID",
    help="Switch off a rule by id; repeat for several.",
)
@style_options
@selection_options
@jobs_option
@cache_options
@force_option("_msft")
@click.option("--diff", is_flag=True, help="Write nothing; print a unified diff of every change.")
@click.option(
    "--patch",
    "patch_path",
    type=click.Path(path_type=Path),
    help="Also write the migration as one patch (git apply / patch -p1 in the input gives the tree).",
)
@click.pass_context
def migrate(
    ctx,
    input_path,
    output_path,
    version,
    rule_files,
    disabled,
    style,
    target,
    specify_device,
    entries,
    optimize,
    includes,
    excludes,
    take_everything,
    jobs,
    no_cache,
    cache_dir,
    force,
    diff,
    patch_path,
):
    """Rewrite a CUDA training tree (or one file) into OUTPUT/<name>_msft/.

    After the options, `distributed -m MAIN [-t MODEL]` makes a single-card script multi-card
    (msFmkTransplt's syntax): OUTPUT/<name>_msft_multi/ with a torchrun launcher."""
    selection = _selection(includes, excludes, take_everything)
    cache_folder = _cache_folder(no_cache, cache_dir)
    if diff and patch_path is not None:
        raise click.UsageError("--diff writes nothing and --patch writes a file: pass one of them")
    settings = (
        input_path,
        output_path,
        version,
        rule_files,
        disabled,
        jobs,
        force,
        diff,
        selection,
        patch_path,
        cache_folder,
    )
    if ctx.invoked_subcommand is not None:
        if style != MIGRATION_MODES[0] or specify_device or entries or target != MIGRATION_TARGETS[0]:
            raise UserError(
                "distributed takes no --mode, --target, -s or --entry", "name the main script with -m"
            )
        ctx.obj = settings, _optimize_choice(optimize)
        return
    style = _style_for(style, specify_device)
    entries = _entries_for(style, entries)
    _migrate(*settings, style=style, target=target, entries=entries, optimize=_optimize_choice(optimize))


@migrate.command("distributed")
@click.option(
    "-m", "--main", "main_script", required=True, type=click.Path(path_type=Path), help="The training script."
)
@click.option(
    "-t",
    "--target_model",
    "--target-model",
    "target_model",
    default=None,
    help="The variable holding the model (model, self.model, ...); several separated by commas "
    "(netG,netD) where the script trains several. Default: model, or where the main script never moves "
    "model to the device, the one variable it moves whose .parameters() go to an optimizer.",
)
@click.option(
    "--shard-eval",
    is_flag=True,
    help="Shard the evaluation loaders too (default: each process evaluates all).",
)
@click.pass_obj
def migrate_distributed(obj, main_script, target_model, shard_eval):
    """Single card to multi-card: process group from torchrun's environment (hccl), the model in
    DistributedDataParallel, training loaders sharded, logging and saving on rank 0."""
    settings, optimize = obj
    _migrate(
        *settings,
        optimize=optimize,
        style="distributed",
        entries=(main_script,),
        entry_flag="-m",
        target_model=target_model,
        shard_eval=shard_eval,
    )


def _migrate(
    input_path, output_path, version, rule_files, disabled, jobs, force, diff, selection, patch, cache, **mode
) -> None:
    """Run one migration; ``mode``: the ProjectOptions of the migration mode (style, entries, ...)."""
    from gpu2npu.commands.migrate import print_diffs, run_migration
    from gpu2npu.report.summary import summary_table

    for value, option in ((input_path, "'-i' / '--input'"), (output_path, "'-o' / '--output'")):
        if value is None:
            raise click.UsageError(f"Missing option {option}.")
    options = ProjectOptions(
        input=input_path,
        version=chosen_version(version),
        rule_files=tuple(rule_files),
        disabled_rules=tuple(disabled),
        jobs=jobs,
        progress=sys.stderr.isatty(),
        selection=selection,
        cache_dir=cache,
        **mode,
    )
    output = OutputOptions(output_path, force, patch)
    started = time.monotonic()
    run = run_migration(options, output, diff)
    elapsed = time.monotonic() - started
    if diff:
        print_diffs(run)
        click.echo(summary_table(run), err=True)
        if run.model_notice:
            click.echo(run.model_notice, err=True)
    else:
        click.echo(summary_table(run))
        reused = (
            f"; {run.cache_counts.hits} of {len(run.all_results)} files from the cache" if run.cache else ""
        )
        click.echo(f"migrated {input_path} -> {output_path / run.output_name} in {elapsed:.1f} s{reused}")
        click.echo(f"reports: {output_path / run.output_name / 'transplant_result_file'}")
        if run.launcher:
            click.echo(f"launcher: {output_path / run.output_name / run.launcher} [NPUS] [arguments...]")
        if run.model_notice:
            click.echo(run.model_notice)
        if patch is not None:
            click.echo(f"patch: {patch} (git apply, or patch -p1, in {run.plan.root})")
    if run.had_internal_errors:
        click.echo(
            "gpu2npu: some files hit an internal error and were copied unchanged; please report it", err=True
        )
        sys.exit(1)


@main.group()
def rules():
    """Inspect and check rule files."""


@rules.command("list")
@version_option
@rule_option("Also list the rules of this file.")
@click.option("--all-versions", is_flag=True, help="List rules of every version, not only the target's.")
@click.option(
    "--mode", "style", type=click.Choice(MIGRATION_MODES), default=MIGRATION_MODES[0], help="Migration mode."
)
@target_option
def rules_list(version, rule_files, all_versions, style, target):
    """List rule ids, kinds and what each rule does."""
    from gpu2npu.commands.rules import rules_table

    torch_version = chosen_version(version, announce=False)
    click.echo(rules_table(tuple(rule_files), None if all_versions else torch_version, style, target))


@rules.command("validate")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
def rules_validate(files):
    """Check rule files (JSON or YAML) against the schema; exit 2 at the first problem."""
    from gpu2npu.rules.loader import load_rule_file

    for path in files:
        loaded = load_rule_file(path, id_prefix=path.name)
        click.echo(f"{path}: {len(loaded.rules)} rule(s), valid")


@rules.command("explain")
@click.argument("name")
@version_option
@rule_option("Also apply the ApiStatusRule entries of this file.")
def rules_explain(name, version, rule_files):
    """Show whether a torch API works on NPU for a version, and the facts behind the answer."""
    from gpu2npu.commands.rules import explain

    click.echo(explain(name, chosen_version(version, announce=False), rule_files))


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@version_option
@rule_option("Extra rule file (JSON or YAML).")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "sarif", "junit", "github"]),
    default="text",
    show_default=True,
)
@click.option("--output", type=click.Path(path_type=Path), help="Write the report here instead of stdout.")
@click.option(
    "--fail-on",
    type=click.Choice(["unsupported", "cuda-op", "unknown", "convertible", "any"]),
    default=None,
    help="Lowest category that fails the run (any < convertible < unknown < cuda-op < unsupported); "
    "default: unsupported, with --target portable convertible (every CUDA use gpu2npu can rewrite).",
)
@click.option("--baseline", type=click.Path(path_type=Path), help="Accepted findings: fail only on new ones.")
@click.option("--update-baseline", is_flag=True, help="Write the current findings to --baseline and exit 0.")
@click.option(
    "--changed-only",
    "changed_ref",
    metavar="REF",
    help="Check only the files changed since the git ref REF (commits, staged, not staged, new): "
    "for pull requests.",
)
@selection_options
@style_options
@jobs_option
@cache_options
def check(
    paths,
    version,
    rule_files,
    fmt,
    output,
    fail_on,
    baseline,
    update_baseline,
    changed_ref,
    includes,
    excludes,
    take_everything,
    style,
    target,
    specify_device,
    entries,
    optimize,
    jobs,
    no_cache,
    cache_dir,
):
    """Fail (exit 1) when PATHS hold code that will not run on Ascend NPU; read-only.

    Exit codes: 0 nothing at or above --fail-on beyond the baseline; 1 such findings;
    2 usage or input error."""
    from gpu2npu.commands.check.formats import render
    from gpu2npu.commands.check.run import run_check

    if update_baseline and baseline is None:
        raise UserError("--update-baseline needs --baseline FILE", "name the file to write")
    torch_version = chosen_version(version, announce=False)
    style = _style_for(style, specify_device)
    if fail_on is None:
        fail_on = "convertible" if target == "portable" else "unsupported"
    result = run_check(
        paths,
        torch_version,
        rule_files,
        fail_on,
        baseline,
        update_baseline,
        (tuple(includes), tuple(excludes), not take_everything),
        jobs,
        progress=sys.stderr.isatty(),
        style=style,
        entries=_entries_for(style, entries),
        target=target,
        changed_since_ref=changed_ref,
        cache_dir=_cache_folder(no_cache, cache_dir),
        optimize=_optimize_choice(optimize),
    )
    report = render(fmt, result.findings, result.summary, result.failing)
    if output is not None:
        output.write_text(report, encoding="utf-8")
    else:
        click.echo(report, nl=False)
    if update_baseline:
        click.echo(f"gpu2npu: wrote {len(result.findings)} finding(s) to the baseline {baseline}", err=True)
        return
    sys.exit(result.exit_code)


class ManyValues(click.Option):
    """An option that takes every following word up to the next option, as msFmkTransplt's
    ``-api a.csv b.csv`` does; repeating the option (``-api a.csv -api b.csv``) works too."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("multiple", True)
        super().__init__(*args, **kwargs)

    def add_to_parser(self, parser, ctx):
        super().add_to_parser(parser, ctx)
        for name in self.opts:
            option = parser._long_opt.get(name) or parser._short_opt.get(name)
            if option is not None:
                option.process = self._greedy(option.process)

    @staticmethod
    def _greedy(process):
        def take_following(value, state):
            values = [value]
            while state.rargs and not state.rargs[0].startswith("-"):
                values.append(state.rargs.pop(0))
            for item in values:
                process(item, state)

        return take_following


@main.command()
@input_option("Project (or library) directory, or a .py file.")
@output_option("_analysis")
@version_option
@click.option(
    "-m",
    "--mode",
    type=click.Choice([mode.name for mode in analyse_modes()]),
    default=analyse_modes()[0].name,
    show_default=True,
    help="Analysis mode.",
)
@click.option(
    "-api",
    "--api-files",
    "api_files",
    cls=ManyValues,
    type=click.Path(path_type=Path),
    metavar="CSV...",
    help="full_unsupported_results.csv of a third_party analysis; its functions count as unsupported.",
)
@click.option(
    "-env",
    "--env-path",
    "env_paths",
    cls=ManyValues,
    type=click.Path(path_type=Path),
    metavar="DIR...",
    help="third_party: more directories to resolve imports in (installed libraries, other checkouts).",
)
@rule_option("Extra rule file (JSON or YAML).")
@selection_options
@jobs_option
@cache_options
@force_option("_analysis")
def analyse(
    input_path,
    output_path,
    version,
    mode,
    api_files,
    env_paths,
    rule_files,
    includes,
    excludes,
    take_everything,
    jobs,
    no_cache,
    cache_dir,
    force,
):
    from gpu2npu.commands.analyse import run_analysis
    from gpu2npu.modes import AnalyseRequest

    options = ProjectOptions(
        input=input_path,
        version=chosen_version(version),
        rule_files=tuple(rule_files),
        jobs=jobs,
        progress=sys.stderr.isatty(),
        selection=_selection(includes, excludes, take_everything),
        cache_dir=_cache_folder(no_cache, cache_dir),
    )
    request = AnalyseRequest(options, tuple(api_files), tuple(env_paths))
    destination, summary, result = run_analysis(request, OutputOptions(output_path, force), mode)
    for name, count in summary["report_rows"].items():
        click.echo(f"{name}: {count} row(s)")
    click.echo(f"analysed {input_path} -> {destination}")
    for hint in result.hints:
        click.echo(hint)


analyse.help = "\n".join(
    ["Analyse a project for NPU without migrating it (reads the input only).", "", "\b", "Modes:"]
    + [f"  {mode.name:<15}{mode.help}" for mode in analyse_modes()]
)


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "--devices",
    default=1,
    show_default=True,
    type=click.IntRange(min=0),
    help="Number of NPUs to emulate (0: none, torch.npu.is_available() is False).",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- COMMAND [ARGS]...")
def run(devices, command):
    """Run COMMAND (python train.py ...) on the CPU with gpu2npu's stand-in for torch_npu.

    A smoke test for migrated code on machines without an NPU: 'npu' devices are placed on the
    CPU, torch.npu and torch_npu's APIs are emulated (see gpu2npu.standin). Exits with COMMAND's
    exit code."""
    from gpu2npu.commands.run import run_with_standin

    sys.exit(run_with_standin(command, devices))
