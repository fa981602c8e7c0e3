"""Whisper's token budget: one decoder context of ``max_length`` tokens (448) per window, shared by the
prompt and the transcript.

Whisper (and OpenAI's API: "the model will only consider the final 224 tokens of the prompt") keeps
at most the last ``max_length // 2 - 1`` tokens (223) of the prompt, so that the other half stays
for the transcript. Here a longer ``initial_prompt`` is trimmed the same way, from its start, and the
response says how much was dropped; it is not refused, because clients pass earlier transcripts as
the prompt and expect the API's behaviour. Without the trim, faster-whisper's remainder pass raised
``ValueError`` (a 500) and transformers decoded only the 40-odd tokens left after the prompt.
``hotwords`` share the prompt's half (``fit_prompts``): they come first, as faster-whisper puts them,
and ``initial_prompt`` keeps its last tokens in what they leave.

Text that the model's tokenizer reads as one of Whisper's control tokens (``<|endoftext|>``,
``<|startoftranscript|>``...) is refused (422): it would be read as the token itself (transformers
refused it with a ValueError). Text the tokenizer reads as plain text (``<|0.00|>`` for the
CTranslate2 models' tokenizer, which has no timestamp tokens) is plain text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from whisper_endpoint.core.errors import InvalidParameterError

# Prompt framing besides its text: <|startofprev|> before it; after it <|startoftranscript|>, the
# language and the task (multilingual models), and <|notimestamps|> when timestamps are off.
FRAMING_TOKENS = 5


@dataclass(frozen=True)
class Prompt:
    ids: tuple[int, ...]  # the prompt's text tokens that are kept
    text: str | None  # the same, as text (faster-whisper takes text)


def prompt_budget(max_length: int) -> int:
    return max_length // 2 - 1


def output_budget(max_length: int) -> int:
    """Tokens a window can always decode, whatever the prompt (at most its budget) and framing."""
    return max_length - prompt_budget(max_length) - FRAMING_TOKENS


def fit_prompt(
    text: str | None,
    *,
    encode: Callable[[str], Sequence[int]],
    decode: Callable[[Sequence[int]], str],
    first_special_id: int,
    max_length: int,
    warnings: list[str],
    name: str = "initial_prompt",
    budget: int | None = None,
    keep_start: bool = False,
) -> Prompt:
    """``text`` as Whisper tokenizes it (a leading space), trimmed to ``budget`` tokens (the prompt's
    budget by default): its last ones, or its first with ``keep_start``."""
    if not text or not text.strip():
        return Prompt((), None)
    ids = list(encode(" " + text.strip()))
    special = [i for i in ids if i >= first_special_id]
    if special:
        raise InvalidParameterError(
            f"parameters.{name} contains {decode(special[:1])!r}, the text of one of Whisper's control "
            "tokens; remove it (the prompt is plain text)"
        )
    whole = prompt_budget(max_length)
    budget = whole if budget is None else budget
    if len(ids) <= budget:
        return Prompt(tuple(ids), text)
    kept = ids[:budget] if keep_start else ids[len(ids) - budget:]
    shared = "" if budget == whole else f"; hotwords take {whole - budget} of the {whole}"
    first, other = ("first", "last") if keep_start else ("last", "first")
    warnings.append(
        f"{name} is {len(ids)} tokens; Whisper uses its {first} {budget} (half of its {max_length}-token context, "
        f"the other half is for the transcript{shared}): its {other} {len(ids) - budget} tokens were not used"
    )
    if not kept:
        return Prompt((), None)
    # A cut inside a multi-byte character leaves replacement characters at the cut.
    return Prompt(tuple(kept), decode(kept).strip("\ufffd"))


def fit_prompts(hotwords: str | None, initial_prompt: str | None, **tokenizer) -> tuple[Prompt, Prompt]:
    """``hotwords`` and ``initial_prompt`` in the one prompt budget: the hotwords first (their first
    tokens, as faster-whisper trims them), the prompt in what they leave (its last tokens)."""
    hot = fit_prompt(hotwords, name="hotwords", keep_start=True, **tokenizer)
    left = prompt_budget(tokenizer["max_length"]) - len(hot.ids)
    return hot, fit_prompt(initial_prompt, budget=left, **tokenizer)
