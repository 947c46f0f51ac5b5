"""The flag schema's lookups: one spec per dest, the current spelling over a retired one."""

from __future__ import annotations

import dataclasses

import pytest

from sglaunch.flags.schema import FlagSchema, FlagSpec, bundled_schema

S = bundled_schema()


def _two_for_one_dest() -> FlagSchema:
    # the retired spelling comes last, as --monokernel-backend does in sglang's parser
    return FlagSchema(
        flags=[
            FlagSpec(dest="x", options=("--new-x",), action="store_true", default=False),
            FlagSpec(
                dest="x",
                options=("--old-x",),
                action="store_const",
                default=None,
                deprecated=True,
            ),
        ],
        sglang_version="0",
    )


def test_cli_names_agree_with_cli_name_for_a_shared_dest() -> None:
    assert S.cli_names()["enable_amd_monokernel"] == "--enable-amd-monokernel"
    assert all(S.cli_names()[d] == S.cli_name(d) for d in S.by_dest)
    assert _two_for_one_dest().cli_names() == {"x": "--new-x"}


def test_defaults_come_from_the_current_spelling() -> None:
    assert _two_for_one_dest().defaults() == {"x": False}
    assert all(S.defaults()[d] == S.by_dest[d].default for d in S.by_dest)


TP = S.get("tp_size")


@pytest.mark.parametrize(
    ("words", "found"),
    [
        ([], True),
        (["tp"], True),
        (["tensor-parallel"], True),  # an alias
        (["tp_size"], True),  # the dest
        (["TENSOR", "size"], True),  # any case, every word
        (["tensor", "radix"], False),  # one word missing is no match
    ],
)
def test_matches_names_aliases_and_dest(words: list[str], found: bool) -> None:
    assert TP is not None
    assert TP.matches(words) is found


def test_matches_section_namespace_and_help() -> None:
    spec = FlagSpec(
        dest="d",
        options=("--d",),
        section="Memory and scheduling",
        namespace="scheduler",
        help="Fraction of GPU memory",
    )
    assert spec.matches(["memory", "fraction"])
    assert spec.matches(["scheduler"])
    assert not spec.matches(["kernel"])


def test_a_spec_read_from_json_is_the_one_its_constructor_builds() -> None:
    """from_json fills the instance in one step: every field, as the dataclass's own
    __init__ would set it (a field added later and not read would show here)."""
    for spec in S.flags:
        built = FlagSpec(**{f.name: getattr(spec, f.name) for f in dataclasses.fields(FlagSpec)})
        assert spec == built
        assert list(vars(spec)) == list(vars(built))
    minimal = FlagSpec.from_json({"dest": "x", "options": ["--x"]})
    assert vars(minimal) == vars(FlagSpec(dest="x", options=("--x",)))


def test_every_name_of_a_release_reads_the_same_bundled_schema() -> None:
    assert bundled_schema() is bundled_schema(S.sglang_version)
    assert bundled_schema("0.5.23.post1") is bundled_schema("0.5.23")
