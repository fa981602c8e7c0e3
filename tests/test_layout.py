"""The package's layout rules (issue 70), checked on the source: no module over 400 lines, one context
variable in the whole package, and no function of an ASR engine with more than five parameters (one
request's state is passed as one object), but the engine library's own methods we override."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "whisper_endpoint"
ENGINES = ("asr/ctranslate2", "asr/transformers")
MOST_LINES, MOST_PARAMETERS = 400, 5


def _modules(folder: Path = PACKAGE) -> list[Path]:
    return sorted(folder.rglob("*.py"))


def long_modules(folder: Path = PACKAGE) -> list[str]:
    return [f"{path.relative_to(folder)}: {lines} lines" for path in _modules(folder)
            if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MOST_LINES]


def context_variables(folder: Path = PACKAGE) -> list[str]:
    return [f"{path.relative_to(folder)}:{number}" for path in _modules(folder)
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "ContextVar" in line]


def _overridden() -> set[str]:
    """The methods of the engines' libraries that our subclasses override (their signatures are theirs)."""
    from faster_whisper import BatchedInferencePipeline, WhisperModel

    return {name for cls in (WhisperModel, BatchedInferencePipeline) for name in dir(cls)}


def crowded_functions(folder: Path = PACKAGE, engines=ENGINES) -> list[str]:
    found = []
    for engine in engines:
        for path in _modules(folder / engine):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                a = node.args
                count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
                if count > MOST_PARAMETERS and node.name not in _overridden() | {"__call__"}:
                    found.append(f"{path.relative_to(folder)}:{node.lineno} {node.name}: {count} parameters")
    return found


def test_no_module_is_over_400_lines():
    assert long_modules() == []


def test_one_context_variable_in_the_whole_package():
    assert len(context_variables()) <= 1, context_variables()


def test_no_engine_function_takes_more_than_five_parameters():
    assert crowded_functions() == []


def test_the_rules_see_what_breaks_them(tmp_path):
    engine = tmp_path / "asr" / "ctranslate2"
    engine.mkdir(parents=True)
    (engine / "crowded.py").write_text(
        "from contextvars import ContextVar\n_a = ContextVar('a')\n"
        "def decode(a, b, c, d, e, f):\n    pass\n"
        "def find_alignment(self, tokenizer, text_tokens, encoder_output, num_frames, median_filter_width=7):\n"
        "    pass\n" + "\n" * MOST_LINES)
    assert long_modules(tmp_path) == [f"asr/ctranslate2/crowded.py: {MOST_LINES + 6} lines"]
    assert context_variables(tmp_path) == ["asr/ctranslate2/crowded.py:1", "asr/ctranslate2/crowded.py:2"]
    assert crowded_functions(tmp_path, engines=("asr/ctranslate2",)) == [
        "asr/ctranslate2/crowded.py:3 decode: 6 parameters"]
