"""Turn a CTranslate2 Whisper directory into a transformers ``WhisperForConditionalGeneration`` one.

The embedded models arrive only in CTranslate2's format, but speculative decoding, word timestamps
through the pipeline and the transformers backend need a transformers directory. Nothing here needs
the network or the ctranslate2 package: ``model.bin`` is read with ``struct``.

``model.bin`` (binary version 6, written by ``ctranslate2.specs.model_spec.ModelSpec._serialize``;
little-endian; a string is a uint16 length counting a trailing NUL, the UTF-8 bytes, the NUL)::

    uint32 version | string spec name ("WhisperSpec") | uint32 spec revision | uint32 n_variables
    n_variables x (string name | uint8 rank | rank x uint32 dim | uint8 dtype | uint32 n_bytes | data)
    uint32 n_aliases | n_aliases x (string alias | string target)

Rank-0 variables are spec attributes (``encoder/num_heads``, ``decoder/pre_norm``...). Quantized
weights come as int8/int16 ``X/weight`` plus ``X/weight_scale``: ``weight = quantized / scale``.
Names map onto transformers' (gamma/beta are a norm's weight/bias):

    encoder/conv{1,2}                         -> model.encoder.conv{1,2}
    */position_encodings/encodings            -> model.*.embed_positions.weight
    */layer_N/self_attention/linear_0         -> self_attn.{q,k,v}_proj (fused along the rows)
    */layer_N/self_attention/linear_1         -> self_attn.out_proj
    decoder/layer_N/attention/linear_{0,1,2}  -> encoder_attn.q_proj, .{k,v}_proj (fused), .out_proj
    */ffn/linear_{0,1}                        -> fc1, fc2
    */{self_attention,attention,ffn}/layer_norm -> self_attn_/encoder_attn_/final_layer_norm
    {encoder,decoder}/layer_norm              -> model.{encoder,decoder}.layer_norm (final norms)
    decoder/embeddings (= decoder/projection) -> embed_tokens (= proj_out, tied)

``config.json`` holds what ``generate()`` reads from ``generation_config.json``: suppress_ids,
suppress_ids_begin, lang_ids, alignment_heads (used by word timestamps).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import uuid
from pathlib import Path

import torch

from whisper_endpoint.core.errors import ModelLoadError
from whisper_endpoint.weights.model_bin import layout

# model.bin dtype ids, in the order of ctranslate2's DataType enum (include/ctranslate2/types.h)
_TORCH_DTYPES = (torch.float32, torch.int8, torch.int16, torch.int32, torch.float16, torch.bfloat16)
# (CT2 name inside a layer, transformers names of the row blocks fused into it, their prefix)
_LAYER_PARTS = (
    ("self_attention/linear_0", ("q_proj", "k_proj", "v_proj"), "self_attn."),
    ("self_attention/linear_1", ("out_proj",), "self_attn."),
    ("attention/linear_0", ("q_proj",), "encoder_attn."),
    ("attention/linear_1", ("k_proj", "v_proj"), "encoder_attn."),
    ("attention/linear_2", ("out_proj",), "encoder_attn."),
    ("self_attention/layer_norm", ("self_attn_layer_norm",), ""),
    ("attention/layer_norm", ("encoder_attn_layer_norm",), ""),
    ("ffn/layer_norm", ("final_layer_norm",), ""),
    ("ffn/linear_0", ("fc1",), ""), ("ffn/linear_1", ("fc2",), ""),
)
_PARAMS = {"weight": "weight", "bias": "bias", "gamma": "weight", "beta": "bias"}


def read_model_bin(path: Path) -> dict[str, torch.Tensor]:
    """All variables of a CTranslate2 ``model.bin`` by name, aliases resolved, quantization undone."""
    data = bytearray(path.read_bytes())  # writable, so torch.frombuffer shares it without a copy
    found = layout(data)
    if found.spec != "WhisperSpec":
        raise ModelLoadError(f"{path}: version {found.version}, spec {found.spec!r}; only version 6 WhisperSpec "
                             "converts")
    variables = {}
    for name, variable in found.variables.items():
        if variable.dtype_id >= len(_TORCH_DTYPES):
            raise ModelLoadError(f"{path}: variable {name} has unknown dtype id {variable.dtype_id}")
        dtype = _TORCH_DTYPES[variable.dtype_id]
        tensor = torch.frombuffer(data, dtype=dtype, count=variable.size // dtype.itemsize, offset=variable.offset)
        variables[name] = tensor.reshape(variable.shape)
    for alias, target in found.aliases:
        variables[alias] = variables[target]
    return _dequantize(variables)


def _dequantize(variables: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """int8 scales are per output row (conv weights flattened to rows), int16 ones a scalar."""
    for name in [n for n in variables if n.endswith("_scale")]:
        scale = variables.pop(name).float()
        target = name[: -len("_scale")]
        weight = variables[target].float()
        per_row = scale.reshape(-1, *[1] * (weight.dim() - 1)) if scale.dim() else scale
        variables[target] = weight / per_row
    return variables


def _state_dict(v: dict[str, torch.Tensor], enc_layers: int, dec_layers: int) -> dict[str, torch.Tensor]:
    top = {"decoder/embeddings/weight": "model.decoder.embed_tokens.weight"}
    top["decoder/projection/weight"] = "proj_out.weight"
    for side in ("encoder", "decoder"):
        top[f"{side}/position_encodings/encodings"] = f"model.{side}.embed_positions.weight"
        top |= {f"{side}/layer_norm/{p}": f"model.{side}.layer_norm.{_PARAMS[p]}" for p in ("gamma", "beta")}
    for conv in ("conv1", "conv2"):
        top |= {f"encoder/{conv}/{p}": f"model.encoder.{conv}.{p}" for p in ("weight", "bias")}
    sd = {hf: v.pop(ct2) for ct2, hf in top.items()}
    for side, count in (("encoder", enc_layers), ("decoder", dec_layers)):
        for i in range(count):
            for ct2_name, hf_names, hf_prefix in _LAYER_PARTS:
                src = f"{side}/layer_{i}/{ct2_name}"
                for param in [p for p in _PARAMS if f"{src}/{p}" in v]:
                    blocks = v.pop(f"{src}/{param}").chunk(len(hf_names), dim=0)
                    for hf_name, block in zip(hf_names, blocks):
                        # Whisper's k_proj has no bias: a key bias adds the same q.b to every key's
                        # score for one query, which softmax cancels, so dropping it is exact.
                        if not (hf_name == "k_proj" and param == "bias"):
                            sd[f"model.{side}.layers.{i}.{hf_prefix}{hf_name}.{_PARAMS[param]}"] = block
    leftover = [name for name, t in v.items() if t.dim() > 0]
    if leftover:
        raise ModelLoadError(f"unexpected variables in model.bin, layout not understood: {leftover[:5]}")
    return sd


def _model_config(v: dict[str, torch.Tensor], ids: dict[str, int], ct2_config: dict):
    from transformers import WhisperConfig

    def layers(side: str) -> int:
        return len({m.group(1) for name in v if (m := re.match(rf"{side}/layer_(\d+)/", name))})

    def heads(side: str) -> int:  # stored since WhisperSpec has existed; Whisper's head size is 64
        return int(v[f"{side}/num_heads"]) if f"{side}/num_heads" in v else d_model // 64

    vocab, d_model = v["decoder/embeddings/weight"].shape
    eot = ids["<|endoftext|>"]
    return WhisperConfig(
        vocab_size=vocab, num_mel_bins=v["encoder/conv1/weight"].shape[1], d_model=d_model,
        encoder_layers=layers("encoder"), decoder_layers=layers("decoder"),
        encoder_attention_heads=heads("encoder"), decoder_attention_heads=heads("decoder"),
        encoder_ffn_dim=v["encoder/layer_0/ffn/linear_0/weight"].shape[0],
        decoder_ffn_dim=v["decoder/layer_0/ffn/linear_0/weight"].shape[0],
        max_source_positions=v["encoder/position_encodings/encodings"].shape[0],
        max_target_positions=v["decoder/position_encodings/encodings"].shape[0],
        bos_token_id=eot, eos_token_id=eot, pad_token_id=eot,
        decoder_start_token_id=ids["<|startoftranscript|>"],
        suppress_tokens=ct2_config.get("suppress_ids"),
        begin_suppress_tokens=ct2_config.get("suppress_ids_begin"),
    )


def _generation_config(config, ids: dict[str, int], ct2_config: dict):
    from transformers import GenerationConfig

    # OpenAI's rule (n_vocab >= 51865), not "lang_ids is set": tiny.en's config lists 98 of them.
    multilingual = config.vocab_size >= 51865
    layers, n_heads = config.decoder_layers, config.decoder_attention_heads
    # OpenAI's default when a checkpoint has no tuned alignment heads: every head of the upper half.
    default_heads = [[layer, h] for layer in range(layers // 2, layers) for h in range(n_heads)]
    fields = dict(
        decoder_start_token_id=config.decoder_start_token_id, bos_token_id=config.bos_token_id,
        eos_token_id=config.eos_token_id, pad_token_id=config.pad_token_id,
        no_timestamps_token_id=ids["<|notimestamps|>"], prev_sot_token_id=ids.get("<|startofprev|>"),
        # The same ids faster-whisper suppresses (its non-speech tokens plus the task/sot tokens).
        suppress_tokens=ct2_config.get("suppress_ids", []),
        begin_suppress_tokens=ct2_config.get("suppress_ids_begin", []),
        alignment_heads=ct2_config.get("alignment_heads") or default_heads,  # for word timestamps
        max_length=config.max_target_positions,
        max_initial_timestamp_index=50,  # 1.0 s, faster-whisper's max_initial_timestamp default
        forced_decoder_ids=None, return_timestamps=False, is_multilingual=multilingual,
    )
    if multilingual:
        # Only then: generate() detects the language whenever lang_to_id exists and none is given,
        # which on an English-only model would insert a language token it was never trained with.
        id_to_token = {i: token for token, i in ids.items()}
        fields["lang_to_id"] = {id_to_token[i]: i for i in ct2_config.get("lang_ids", [])}
        fields["task_to_id"] = {task: ids[f"<|{task}|>"] for task in ("transcribe", "translate")}
        # Hub checkpoints carry the task in forced_decoder_ids; without either, a detected-language
        # prompt lacks <|transcribe|> and greedy decoding can run on to max_length.
        fields["task"] = "transcribe"
    return GenerationConfig(**fields)


def _tokenizer(ct2_dir: Path, staging: Path):
    """Whisper tokenizer from tokenizer.json, with every special token and all 1501 timestamp tokens.

    transformers takes the first timestamp id to be ``all_special_ids[-1] + 1``, so the special
    tokens must be registered, in id order; English-only exports often lack ``<|0.00|>``... tokens.
    """
    from tokenizers import AddedToken
    from transformers import WhisperTokenizerFast  # transformers 5: the same class as WhisperTokenizer

    source = ct2_dir / "tokenizer.json"
    if not source.is_file():
        raise ModelLoadError(f"{ct2_dir}: no tokenizer.json, so no transformers tokenizer can be built")
    added = json.loads(source.read_text(encoding="utf-8"))["added_tokens"]
    specials = [t["content"] for t in sorted(added, key=lambda t: t["id"]) if t["special"]]
    scratch = staging / "source-tokenizer"  # from_pretrained wants a directory
    scratch.mkdir()
    shutil.copy(source, scratch / "tokenizer.json")
    # additional_special_tokens: the name transformers 4 knows (5 renamed it extra_special_tokens and
    # still takes this one; in 4, extra_special_tokens is a dict of named tokens).
    tokenizer = WhisperTokenizerFast.from_pretrained(scratch, additional_special_tokens=specials, model_max_length=448)
    shutil.rmtree(scratch)
    tokenizer.init_kwargs.pop("is_local", None)  # from_pretrained's arguments, not the tokenizer's
    tokenizer.init_kwargs.pop("local_files_only", None)
    vocab = tokenizer.get_vocab()
    stamps = ["<|%.2f|>" % (i * 0.02) for i in range(1501)]
    tokenizer.add_tokens([AddedToken(s, normalized=False, special=False) for s in stamps if s not in vocab])
    return tokenizer


def _build(ct2_dir: Path, staging: Path, dtype: torch.dtype) -> None:
    from transformers import WhisperFeatureExtractor, WhisperForConditionalGeneration

    from whisper_endpoint.weights.transformers_compat import save_tokenizer_files

    for name in ("config.json", "model.bin"):
        if not (ct2_dir / name).is_file():
            raise ModelLoadError(f"{ct2_dir} is not a CTranslate2 Whisper directory: no {name}")
    ct2_config = json.loads((ct2_dir / "config.json").read_text(encoding="utf-8"))
    variables = read_model_bin(ct2_dir / "model.bin")
    tokenizer = _tokenizer(ct2_dir, staging)
    ids = tokenizer.get_vocab()
    try:
        config = _model_config(variables, ids, ct2_config)
        generation_config = _generation_config(config, ids, ct2_config)
        state = _state_dict(variables, config.encoder_layers, config.decoder_layers)
    except KeyError as exc:  # a tensor or special token that every Whisper model has
        raise ModelLoadError(f"{ct2_dir}: not a Whisper layout this converter knows, no {exc}") from exc
    if len(tokenizer) != config.vocab_size:
        raise ModelLoadError(f"{ct2_dir}: tokenizer has {len(tokenizer)} tokens, model {config.vocab_size}")
    with torch.device("meta"):  # no random init: every tensor comes from model.bin
        model = WhisperForConditionalGeneration(config)
    try:
        model.load_state_dict({k: t.to(dtype) for k, t in state.items()}, strict=True, assign=True)
    except RuntimeError as exc:  # missing or unexpected keys, or shapes that disagree
        raise ModelLoadError(f"{ct2_dir}: weights do not fit WhisperForConditionalGeneration: {exc}") from exc
    model.tie_weights()
    model.generation_config = generation_config
    model.save_pretrained(staging)
    features = WhisperFeatureExtractor(feature_size=config.num_mel_bins)
    features.save_pretrained(staging)  # preprocessor_config.json, which the pipeline looks for
    save_tokenizer_files(staging, features, tokenizer)


def convert_ctranslate2_to_transformers(
    ct2_dir: Path, out_dir: Path, *, dtype: torch.dtype = torch.float32
) -> Path:
    """Convert once: build in a hidden sibling directory, then one rename, so out_dir is never partial."""
    ct2_dir, out_dir = Path(ct2_dir), Path(out_dir)
    if (out_dir / "model.safetensors").is_file():
        return out_dir
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = out_dir.parent / f".{out_dir.name}.partial-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        _build(ct2_dir, staging, dtype)
        if out_dir.exists() and not (out_dir / "model.safetensors").is_file():
            shutil.rmtree(out_dir)  # incomplete, and not ours (ours appear whole): replace it
        try:
            os.rename(staging, out_dir)
        except OSError:
            if not (out_dir / "model.safetensors").is_file():  # else a concurrent conversion won
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out_dir


# Bump whenever the conversion's output changes: a cached copy from an older version is then not
# reused (one made before the task was carried made the raw pipeline loop on multilingual models).
CONVERSION_VERSION = 2


def converted_model_dir(ct2_dir: Path, cache_dir: Path) -> Path:
    """``cache_dir/transformers/<ct2_dir.name>-v<N>``: the transformers twin, converted on first use."""
    ct2_dir = Path(ct2_dir)
    out_dir = Path(cache_dir) / "transformers" / f"{ct2_dir.name}-v{CONVERSION_VERSION}"
    return convert_ctranslate2_to_transformers(ct2_dir, out_dir)
