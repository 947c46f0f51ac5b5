"""Parse sglang server flags the way sglang's argparse parser does, and write them back.

sglang's parser keeps argparse's `allow_abbrev=True`, so `--tp 2` is
`--tp-size 2`; `--flag=value` works; the last occurrence wins. Unlike argparse,
this parser does not stop at the first problem: it collects every one, each
with argparse's own wording, so a pasted launch line gets all its errors at once.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sglaunch.flags.prefix import options_with_prefix
from sglaunch.flags.schema import FlagSchema, FlagSpec
from sglaunch.flags.values import FlagTypeError, check_choice, convert, format_value
from sglaunch.safeio import shown
from sglaunch.secrets import mask_argv
from sglaunch.validators.facts import FlagIssue, FlagIssueKind

_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")
# "Did you mean" for this many unknown tokens at most: each costs a fuzzy match over
# every option, and a pasted file of junk has thousands.
_MAX_SUGGESTED = 8
# Unknown tokens listed by name in one message; the rest are counted.
_MAX_LISTED = 20


@dataclass
class ParsedFlags:
    values: dict[str, Any] = field(default_factory=dict)
    issues: list[FlagIssue] = field(default_factory=list)
    # dest -> the spelling the user typed (e.g. "--tp"), for messages
    spelled: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.issues


def suggest(option: str, schema: FlagSchema, n: int = 3) -> tuple[str, ...]:
    """Did-you-mean candidates for an unknown option."""
    name = option.split("=", 1)[0]
    options = schema.all_options()
    close = difflib.get_close_matches(name, options, n=n, cutoff=0.6)
    # difflib's ratio ranks a swapped or dropped letter below a longer shared run
    # (`--pd-size` offered --tp-size before --dp-size): one typing slip away comes first
    slips = sorted(
        (o for o in options if one_slip(name, o)),
        key=lambda o: -difflib.SequenceMatcher(None, name, o).ratio(),
    )
    found = list(dict.fromkeys([*slips, *close]))[:n]
    if not found:
        # "--radix" -> flags that contain the word
        bare = name.lstrip("-")
        if len(bare) >= 4:
            found = [o for o in options if bare in o][:n]
    return tuple(found)


def one_slip(typed: str, option: str) -> bool:
    """One letter dropped, added, changed, or two neighbours swapped."""
    if typed == option or abs(len(typed) - len(option)) > 1:
        return False
    if len(typed) == len(option):
        diff = [i for i, (a, b) in enumerate(zip(typed, option, strict=True)) if a != b]
        return len(diff) == 1 or (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and typed[diff[0]] == option[diff[1]]
            and typed[diff[1]] == option[diff[0]]
        )
    short, long = (typed, option) if len(typed) < len(option) else (option, typed)
    i = next((k for k, (a, b) in enumerate(zip(short, long, strict=False)) if a != b), len(short))
    return short[i:] == long[i + 1 :]


class _Lookup:
    def __init__(self, schema: FlagSchema) -> None:
        self.schema = schema

    def find(self, arg: str) -> tuple[FlagSpec | None, str, str | None, FlagIssue | None]:
        """(spec, option as matched, explicit '=' value, issue) for one option-looking token."""
        by_option = self.schema.by_option
        if arg in by_option:
            return by_option[arg], arg, None, None
        explicit: str | None = None
        head = arg
        if "=" in arg:
            head, explicit = arg.split("=", 1)
            if head in by_option:
                return by_option[head], head, explicit, None
        if self.schema.allow_abbrev and arg.startswith("--"):
            matches = options_with_prefix(self.schema, head)
            if len(matches) > 1:
                msg = f"ambiguous option: {head} could match {', '.join(matches)}"
                return (
                    None,
                    head,
                    explicit,
                    FlagIssue(
                        FlagIssueKind.AMBIGUOUS,
                        option=head,
                        message=msg,
                        suggestions=tuple(matches[:6]),
                    ),
                )
            if len(matches) == 1:
                return by_option[matches[0]], matches[0], explicit, None
        return None, head, explicit, None


def _is_value_token(tok: str) -> bool:
    """argparse treats a token as a value unless it looks like an option."""
    if not tok.startswith("-") or tok == "-":
        return True
    # sglang's parser has no option that looks like a negative number
    if _NEGATIVE_NUMBER.match(tok):
        return True
    return " " in tok and not tok.startswith("--")


def _switch_value(spec: FlagSpec, matched: str) -> Any:
    """What an option without a value stores, as its argparse action does."""
    if spec.action == "boolean_optional":
        return not matched.startswith("--no-")
    if spec.action == "store_false":
        return False
    if spec.action == "store_const":
        return spec.const if spec.const is not None else True
    return True


def _converted(
    spec: FlagSpec, matched: str, raw_values: list[str], out: ParsedFlags
) -> list[Any] | None:
    """The values typed as sglang's parser types them; None (an issue recorded) if one fails."""
    name = spec.argparse_name
    converted: list[Any] = []
    for raw in raw_values:
        try:
            value = convert(spec, raw)
        except FlagTypeError as e:
            out.issues.append(
                FlagIssue(
                    FlagIssueKind.INVALID_VALUE,
                    option=matched,
                    dest=spec.dest,
                    value=raw,
                    message=f"argument {name}: {e.message}",
                )
            )
            return None
        choice_error = check_choice(spec, value)
        if choice_error:
            out.issues.append(
                FlagIssue(
                    FlagIssueKind.INVALID_CHOICE,
                    option=matched,
                    dest=spec.dest,
                    value=raw,
                    message=f"argument {name}: {choice_error}",
                    choices=tuple(str(c) for c in spec.choices or ()),
                    suggestions=tuple(
                        difflib.get_close_matches(
                            # 0.6 as for flag names: a looser match offers nvfp4 for fp9
                            raw,
                            [str(c) for c in spec.choices or ()],
                            n=3,
                            cutoff=0.6,
                        )
                    ),
                )
            )
            return None
        converted.append(value)
    return converted


def parse_argv(argv: Iterable[str], schema: FlagSchema) -> ParsedFlags:
    tokens = list(argv)
    out = ParsedFlags()
    lookup = _Lookup(schema)
    unknown: list[list[str]] = []  # each unknown token with the values that follow it
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if tok == "--":
            unknown.extend([t] for t in tokens[i:])
            break
        if _is_value_token(tok):
            unknown.append([tok])
            continue
        if tok in ("-h", "--help"):
            continue
        spec, matched, explicit, issue = lookup.find(tok)
        if issue is not None:
            out.issues.append(issue)
            # skip the values that would have belonged to it
            while i < len(tokens) and _is_value_token(tokens[i]):
                i += 1
            continue
        if spec is None:
            # its values go with it, as argparse lists them: "--foo 2", not "--foo" then "2"
            group = [tok]
            while i < len(tokens) and _is_value_token(tokens[i]) and "=" not in tok:
                group.append(tokens[i])
                i += 1
            unknown.append(group)
            continue
        name = spec.argparse_name
        out.spelled[spec.dest] = tok.split("=", 1)[0]
        if not spec.takes_value:
            if explicit is not None:
                out.issues.append(
                    FlagIssue(
                        FlagIssueKind.UNEXPECTED_VALUE,
                        option=matched,
                        dest=spec.dest,
                        value=explicit,
                        message=f"argument {name}: ignored explicit argument {explicit!r}",
                    )
                )
                continue
            out.values[spec.dest] = _switch_value(spec, matched)
            continue
        # options that take values
        raw_values: list[str] = []
        if explicit is not None:
            raw_values.append(explicit)
        else:
            while i < len(tokens) and _is_value_token(tokens[i]):
                raw_values.append(tokens[i])
                i += 1
                if not spec.is_list:  # nargs None or "?": one value at most
                    break
        if not raw_values and spec.nargs not in ("*", "?"):
            what = "at least one argument" if spec.nargs == "+" else "one argument"
            out.issues.append(
                FlagIssue(
                    FlagIssueKind.MISSING_VALUE,
                    option=matched,
                    dest=spec.dest,
                    message=f"argument {name}: expected {what}",
                )
            )
            continue
        converted = _converted(spec, matched, raw_values, out)
        if converted is None:
            continue
        if spec.action == "store_const":
            # a retired valued flag: the value is checked, the constant is stored
            out.values[spec.dest] = spec.const
        elif spec.is_list:
            out.values[spec.dest] = converted
        elif spec.nargs == "?" and not converted:
            out.values[spec.dest] = spec.const
        else:
            out.values[spec.dest] = converted[0]
    out.issues += _unknown_issues(unknown, schema)
    return out


def _unknown_issues(unknown: list[list[str]], schema: FlagSchema) -> list[FlagIssue]:
    """argparse's "unrecognized arguments", one issue per token, bounded: at most
    _MAX_LISTED listed and _MAX_SUGGESTED given a "did you mean"."""
    issues: list[FlagIssue] = []
    for n, group in enumerate(unknown):
        if n == _MAX_LISTED:
            rest = len(unknown) - n
            issues.append(
                FlagIssue(
                    FlagIssueKind.UNKNOWN,
                    option=f"… and {rest} more",
                    message=f"unrecognized arguments: … and {rest} more",
                )
            )
            break
        shown_tok = _unknown_shown(group, schema)
        issues.append(
            FlagIssue(
                FlagIssueKind.UNKNOWN,
                option=shown_tok,
                message=f"unrecognized arguments: {shown_tok}",
                suggestions=suggest(group[0], schema)
                if group[0].startswith("-") and n < _MAX_SUGGESTED
                else (),
            )
        )
    return issues


def _unknown_shown(group: list[str], schema: FlagSchema) -> str:
    """An unknown token and its values as a message quotes them, as argparse does, except
    that an unknown flag whose name looks secret (`--api-keys sk-…`, `--hf-token=hf_…`)
    keeps its name and loses its value; control characters are escaped, long text cut."""
    return shown(" ".join(mask_argv(group, schema)), 200)


_JSON_TYPES = ("json", "json_object", "json_list")


def flag_tokens(spec: FlagSpec, value: Any) -> list[str]:
    """One flag's command-line tokens, as sglang's parser reads them back.

    The one launch-line writer: the session's line, profile exports (command, script,
    YAML's launch comment) and the engine exports (Slurm, LWS, SkyPilot) all write
    their flags here, so each form says the same thing to sglang.
    """
    if spec.action == "boolean_optional":
        if value is True:
            return [spec.options[0]]
        negative = next((o for o in spec.options if o.startswith("--no-")), None)
        return [negative] if value is False and negative else []
    if not spec.takes_value:
        return [spec.name] if value else []
    if value is None:
        return []
    if spec.type in _JSON_TYPES:
        # a JSON flag's value is JSON text even when it is a bare string
        return [spec.name, json.dumps(value, separators=(",", ":"), ensure_ascii=False)]
    if spec.is_list and isinstance(value, list | tuple):
        return [spec.name, *(format_value(v) for v in value)]
    return [spec.name, format_value(value)]


def to_argv(values: Mapping[str, Any], schema: FlagSchema) -> list[str]:
    """Flags (by dest) back to sglang command-line tokens, in the given order."""
    out: list[str] = []
    for dest, value in values.items():
        spec = schema.by_dest.get(dest)
        if spec is None:
            name = schema.cli_name(dest)
            if value is True:
                out.append(name)
            elif value not in (None, False):
                out += [name, format_value(value)]
            continue
        out += flag_tokens(spec, value)
    return out


# sglang's multi-node flags: every spelling a line may carry (argparse's prefix matching
# lets `--node-r 1` through too, which `node_argv` drops by the same rule).
NODE_FLAGS = ("--nnodes", "--node-rank", "--dist-init-addr", "--nccl-init-addr")


def without_flags(argv: Sequence[str], names: Sequence[str]) -> list[str]:
    """argv less every occurrence of the valued flags `names` (`--x v`, `--x=v`, and any
    unambiguous prefix of them sglang's parser would take as that flag)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        head = tok.split("=", 1)[0]
        if head.startswith("--") and len(head) > 2 and any(n.startswith(head) for n in names):
            i += 1 if "=" in tok else 2
            continue
        out.append(tok)
        i += 1
    return out


def node_argv(
    argv: Sequence[str], rank: str | int, nodes: str | int, dist_init_addr: str
) -> list[str]:
    """One node's flags: `argv` with its own multi-node flags replaced by this node's.

    `rank`, `nodes` and `dist_init_addr` are written as given, so an engine passes its
    own references (`$(LWS_WORKER_INDEX)`, a shell `"$SLURM_PROCID"`) as well as numbers.
    """
    return [
        *without_flags(argv, NODE_FLAGS),
        "--nnodes",
        nodes if isinstance(nodes, str) else str(nodes),
        "--node-rank",
        rank if isinstance(rank, str) else str(rank),
        "--dist-init-addr",
        dist_init_addr,
    ]
