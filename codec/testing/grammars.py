"""Running an exported grammar with llguidance (an optional package), on a byte-level tokenizer.

A real model's tokenizer is not needed to tell whether a grammar accepts a text: with one token
per byte (and the format's markers as special tokens, as the model's tokenizer has them), the
grammar sees every possible cut of the text. Needs ``llguidance`` and ``tokenizers``
(:func:`available` says whether they are installed).
"""

from __future__ import annotations

import importlib.util
from functools import cache
from typing import Any

from codec.export import call_syntax
from codec.format import Format

__all__ = ["accepted_prefix", "available", "byte_tokenizer", "llguidance_accepts", "reply_without_stop"]


def available() -> bool:
    """Whether llguidance and tokenizers are installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("llguidance", "tokenizers"))


@cache
def byte_tokenizer(specials: tuple[str, ...]) -> Any:
    """An llguidance tokenizer of 256 single-byte tokens (id = byte), then ``<eos>`` and ``specials``
    as special tokens."""
    import llguidance
    import tokenizers

    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    codes, extra = printable[:], 0
    stand_ins = printable[:]
    for byte in range(256):
        if byte not in printable:
            codes.append(byte)
            stand_ins.append(256 + extra)
            extra += 1
    vocab = {chr(stand_in): byte for byte, stand_in in zip(codes, stand_ins, strict=True)}
    tk = tokenizers.Tokenizer(tokenizers.models.BPE(vocab=vocab, merges=[]))
    tk.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tk.decoder = tokenizers.decoders.ByteLevel()
    tk.add_special_tokens(["<eos>", *specials])
    return llguidance.LLTokenizer(tk.to_str(), eos_token=tk.token_to_id("<eos>"))


def _matcher(grammar: str, specials: tuple[str, ...]) -> tuple[Any, Any]:
    import llguidance

    tok = byte_tokenizer(specials)
    matcher = llguidance.LLMatcher(tok, grammar, log_level=0)
    if matcher.is_error():
        raise ValueError(f"llguidance refuses the grammar: {matcher.get_error()}")
    return tok, matcher


def llguidance_accepts(grammar: str, text: str, specials: tuple[str, ...] = ()) -> bool:
    """Whether llguidance, running ``grammar`` (its Lark dialect), accepts exactly ``text``."""
    tok, matcher = _matcher(grammar, specials)
    return bool(matcher.consume_tokens(tok.tokenize_str(text, parse_special=True)) and matcher.is_accepting())


def accepted_prefix(grammar: str, text: str, specials: tuple[str, ...] = ()) -> int | None:
    """Where llguidance running ``grammar`` stops accepting ``text``: the length of the longest
    prefix it takes (``len(text)`` when it takes all of it but cannot end there), or None when it
    accepts the whole text."""
    tok, matcher = _matcher(grammar, specials)
    tokens = tok.tokenize_str(text, parse_special=True)
    for index, token in enumerate(tokens):
        if not matcher.consume_token(token):
            return len(tok.decode_bytes(tokens[:index]).decode("utf-8", errors="replace"))
    return None if matcher.is_accepting() else len(text)


def reply_without_stop(fmt: Format, reply: str) -> str:
    """``reply`` less the stop token at its end that a server stops on (the grammar leaves it out)."""
    for stop in call_syntax(fmt, [])[1].stops:
        reply = reply.removesuffix(stop)
    return reply
