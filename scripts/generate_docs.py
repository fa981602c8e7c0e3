"""Regenerate the documentation's generated parts; ``--check`` only says which are stale.

    python -m scripts.generate_docs           # rewrite every generated block and the benchmark plot
    python -m scripts.generate_docs --check   # exit 1 naming each stale file (tests/test_docs.py runs it)

Generated, never copied by hand:
- the parameter table (docs/parameters.md) from ``InferenceConfig``'s fields: name, default, accepted
  values (type and bounds) and the field's description;
- the settings tables from ``ModelSettings`` (docs/parameters.md), ``ServerSettings`` (docs/serving.md),
  ``JobSettings`` (docs/batch_and_jobs.md), ``ScaleSettings`` (docs/batch_and_jobs.md) and
  ``LibrarySettings`` (docs/speaker_library.md);
- the results block of docs/benchmarks.md and docs/img/benchmarks.png from results/benchmarks.json
  (support/bench_report.py and support/bench_plot.py, as ``bench/run.sh`` writes them; no benchmark runs here).

Each block sits between ``<!-- generated:NAME begin -->`` and ``<!-- generated:NAME end -->`` (the
benchmark block keeps bench's own ``bench:results`` markers). The plot is checked by the digest it
carries (a PNG text chunk, ``Source digest``: results/benchmarks.json's content and support/bench_plot.py's
source): pixels differ between matplotlib and FreeType builds, the data it is drawn from does not.
"""

from __future__ import annotations

import argparse
import json
import sys
import typing
from pathlib import Path

from pydantic import BaseModel
from pydantic.fields import FieldInfo

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RESULTS = ROOT / "results" / "benchmarks.json"
PLOT = DOCS / "img" / "benchmarks.png"

MIB = 1024 * 1024
# Defaults computed at start-up from the machine (a home folder, a mounted repository): shown as documented.
COMPUTED_DEFAULTS = {
    "model_cache_dir": "`~/.cache/whisper-endpoint`",
    "model_dir": "`/repository` or `/opt/ml/model` when present, else none",
    "db": "`~/.cache/whisper-endpoint/jobs/jobs.sqlite`",
}


def _settings_classes():
    # The root contract module re-exports the schema (config.py: ``from config import InferenceConfig``).
    from config import InferenceConfig, ModelSettings
    from whisper_endpoint.jobs.settings import JobSettings
    from whisper_endpoint.scale.serve_app import ScaleSettings
    from whisper_endpoint.serving.settings import ServerSettings
    from whisper_endpoint.speakers.library.settings import LibrarySettings

    return InferenceConfig, ModelSettings, ServerSettings, JobSettings, ScaleSettings, LibrarySettings


# --- one cell at a time -------------------------------------------------------------------------------

def _number(value) -> str:
    """A whole number of six digits or more grouped by thousands (1,073,741,824): readable, and never
    taken for a commit hash by the docs' check."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 100_000:
        return f"{value:,}"
    return str(value)


def _readable_unit(name: str, value) -> str:
    """ ' (25 MiB)', ' (7 d)': what a large byte or second count means, for a reader."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return ""
    if name.endswith("_bytes") and value >= MIB:
        amount = value / MIB
        return f" ({_number(amount / 1024)} GiB)" if amount >= 1024 else f" ({_number(round(amount, 1))} MiB)"
    if name.endswith(("_s", "_seconds")) and value >= 3600:
        hours = value / 3600
        return f" ({_number(hours / 24)} d)" if hours >= 48 and hours % 24 == 0 else f" ({_number(hours)} h)"
    return ""


def default_cell(name: str, field: FieldInfo) -> str:
    if field.default_factory is not None:
        if name in COMPUTED_DEFAULTS:
            return COMPUTED_DEFAULTS[name]
        value = field.default_factory()
        return "none" if value in ([], {}, "", None) else f"`{value}`"
    value = field.default
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return _number(value) + _readable_unit(name, value)
    return f"`{value}`" if value != "" else "none"


def _bounds(field: FieldInfo) -> str:
    marks = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<", "min_length": "items >=", "max_length": "at most"}
    parts = []
    for item in field.metadata:
        for attribute, sign in marks.items():
            value = getattr(item, attribute, None)
            if value is not None:
                parts.append(f"{sign} {_number(value)}")
    low = [p for p in parts if p.startswith((">=", ">"))]
    high = [p for p in parts if p.startswith(("<=", "<"))]
    if len(low) == 1 and len(high) == 1 and low[0].startswith(">=") and high[0].startswith("<="):
        return f"{low[0][3:]}-{high[0][3:]}"
    return ", ".join(parts)


def _type_name(annotation) -> str:
    origin = typing.get_origin(annotation)
    args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
    if origin is typing.Literal:
        return ", ".join(f"`{value}`" for value in typing.get_args(annotation))
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " or ".join(_type_name(arg) for arg in args)
    if origin is list:
        return f"list of {_type_name(args[0])}" if args else "list"
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return "objects"
        return {"str": "text", "int": "integer", "float": "number", "bool": "true / false", "Path": "path",
                "SecretStr": "secret text"}.get(annotation.__name__, annotation.__name__)
    return str(annotation)


def values_cell(field: FieldInfo) -> str:
    kind = _type_name(field.annotation)
    bounds = _bounds(field)
    if bounds and kind in ("integer", "number"):
        return f"{kind}, {bounds}"
    return f"{kind} ({bounds})" if bounds else kind


def _text(description: str | None) -> str:
    text = (description or "").replace("|", "\\|").replace("\n", " ")
    return text.replace("<", "&lt;").replace(">", "&gt;")  # <u>, <db>: text, not HTML


def _env_names(model: type, name: str, field: FieldInfo) -> str:
    prefix = model.model_config.get("env_prefix", "")
    alias = field.validation_alias
    choices = getattr(alias, "choices", None) or ([alias] if isinstance(alias, str) else [])
    names = [choice for choice in choices if isinstance(choice, str) and choice.isupper()]
    names = names or [f"{prefix}{name}".upper()]
    return " / ".join(f"`{env}`" for env in names)


# --- the tables ---------------------------------------------------------------------------------------

def _own_fields_first(model: type) -> list[str]:
    """The class's own fields in their order, then inherited ones (InferenceConfig's subtitle options last)."""
    own = [name for name in vars(model).get("__annotations__", {}) if name in model.model_fields]
    return own + [name for name in model.model_fields if name not in own]


def parameter_table(model: type) -> str:
    rows = ["| name | default | values | what it does |", "|---|---|---|---|"]
    for name in _own_fields_first(model):
        field = model.model_fields[name]
        rows.append(f"| `{name}` | {default_cell(name, field)} | {values_cell(field)} | {_text(field.description)} |")
    return "\n".join(rows)


def settings_table(model: type) -> str:
    rows = ["| variable | default | values | meaning |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        rows.append(f"| {_env_names(model, name, field)} | {default_cell(name, field)} | {values_cell(field)} | "
                    f"{_text(field.description)} |")
    return "\n".join(rows)


def blocks() -> dict[Path, dict[str, str]]:
    """file -> marker name -> the block's content (without its markers)."""
    inference, model, server, jobs, scale, library = _settings_classes()
    source = "Generated by `python -m scripts.generate_docs` from `{}`; edit the field descriptions there."
    return {
        DOCS / "parameters.md": {
            "parameters": source.format("InferenceConfig") + "\n\n" + parameter_table(inference),
            "model-settings": source.format("ModelSettings") + "\n\n" + settings_table(model),
        },
        DOCS / "serving.md": {"server-settings": source.format("ServerSettings") + "\n\n" + settings_table(server)},
        DOCS / "batch_and_jobs.md": {
            "job-settings": source.format("JobSettings") + "\n\n" + settings_table(jobs),
            "scale-settings": source.format("ScaleSettings") + "\n\n" + settings_table(scale),
        },
        DOCS / "speaker_library.md": {"library-settings": source.format("LibrarySettings") + "\n\n" + settings_table(library)},
    }


def replace_block(text: str, name: str, content: str, path: Path) -> str:
    begin, end = f"<!-- generated:{name} begin -->", f"<!-- generated:{name} end -->"
    if begin not in text or end not in text:
        raise SystemExit(f"{path.relative_to(ROOT)}: markers {begin} ... {end} are missing")
    return text[: text.index(begin)] + f"{begin}\n{content}\n{end}" + text[text.index(end) + len(end):]


# --- the benchmark block and plot ---------------------------------------------------------------------

def plot_digest(results: dict) -> str:
    from support import bench_plot as plot

    return plot.digest(results)


def png_digest(path: Path) -> str | None:
    if not path.exists():
        return None
    from PIL import Image

    with Image.open(path) as image:
        return image.text.get(  # type: ignore[attr-defined]
            "Source digest")


def benchmark_text(results: dict) -> str:
    from support import bench_report as report

    text = (DOCS / "benchmarks.md").read_text(encoding="utf-8")
    block = f"{report.BEGIN}\n{report.table(results)}\n{report.END}"
    return text[: text.index(report.BEGIN)] + block + text[text.index(report.END) + len(report.END):]


# --- main ---------------------------------------------------------------------------------------------

def stale_and_new() -> dict[Path, str]:
    """Every generated file whose text differs from what the code and results give: path -> new text."""
    changed = {}
    for path, named in blocks().items():
        text = new = path.read_text(encoding="utf-8")
        for name, content in named.items():
            new = replace_block(new, name, content, path)
        if new != text:
            changed[path] = new
    results = json.loads(RESULTS.read_text())
    bench_doc = DOCS / "benchmarks.md"
    new = benchmark_text(results)
    if new != bench_doc.read_text(encoding="utf-8"):
        changed[bench_doc] = new
    return changed


def plot_is_stale() -> bool:
    return png_digest(PLOT) != plot_digest(json.loads(RESULTS.read_text()))


def stale_names() -> list[str]:
    """The generated files that differ from what the code and the results give (repository paths)."""
    names = [str(path.relative_to(ROOT)) for path in stale_and_new()]
    return names + ([str(PLOT.relative_to(ROOT))] if plot_is_stale() else [])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.generate_docs", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming every stale file")
    args = parser.parse_args(argv)
    if args.check:
        names = stale_names()
        for name in names:
            print(f"stale: {name} (run python -m scripts.generate_docs)", file=sys.stderr)
        return 1 if names else 0
    for path, text in stale_and_new().items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    if plot_is_stale():
        from support import bench_plot as plot

        plot.draw(json.loads(RESULTS.read_text()), PLOT)
        print(f"wrote {PLOT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
