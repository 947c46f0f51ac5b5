"""The read-only panels: GPUs, model, and the command preview."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group as RichGroup
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

if TYPE_CHECKING:
    from sglaunch.validators.facts import GpuFacts, ModelFacts


def bar(fraction: float, width: int = 12) -> Text:
    fraction = min(max(fraction, 0.0), 1.0)
    filled = round(fraction * width)
    style = "green" if fraction < 0.7 else "yellow" if fraction < 0.9 else "red"
    return Text("█" * filled, style=style) + Text("░" * (width - filled), style="dim")


def gib(n: int | None) -> str:
    from sglaunch.validators.facts import GIB  # drawn after the first frame, with the facts

    return "?" if n is None else f"{n / GIB:.0f}"


def short_name(name: str) -> str:
    return name.replace("NVIDIA ", "").replace("GeForce ", "")


class GpuPanel(Static):
    """Each GPU: index, name, architecture, memory bar, utilisation, temperature, processes."""

    def show(self, gpu: GpuFacts, *, probing: bool = False) -> None:
        if probing:
            self.update(Text("probing GPUs through NVML…", style="dim"))
            return
        from sglaunch.validators.facts import GpuMode  # drawn after the first frame

        lines: list[RenderableType] = []
        if gpu.mode is GpuMode.PLANNING:
            lines.append(
                Text.assemble(
                    ("planning ", "bold yellow"),
                    (gpu.preset or "", "bold"),
                    ("  ctrl+g to change", "dim"),
                )
            )
            if gpu.status and not gpu.status.startswith("planning mode:"):
                lines.append(Text(gpu.status.split(" — ")[0], style="dim"))
            d = gpu.primary
            if d is not None:
                lines.append(
                    Text.assemble(
                        (gpu.across_nodes(f"{gpu.count}× {short_name(d.name)}"), "bold"),
                        (
                            f"\n{d.arch} {d.sm} · {gib(d.memory_total)} GiB each · "
                            + (
                                f"CUDA {gpu.cuda_version} assumed"
                                if gpu.versions_assumed
                                else f"CUDA {gpu.cuda_version}"
                            ),
                            "dim",
                        ),
                    )
                )
            self.update(RichGroup(*lines))
            return
        archs = sorted({f"{d.arch} {d.sm}" for d in gpu.devices})
        if gpu.nodes > 1:  # the GPUs below are one node's, every node alike
            lines.append(Text(short_name(gpu.describe()), style="bold"))
        lines.append(
            Text(
                f"{' / '.join(archs)} · driver {gpu.driver_version} · CUDA {gpu.cuda_version}",
                style="dim",
            )
        )
        table = Table.grid(padding=(0, 1))
        table.add_column(justify="right")
        table.add_column()
        table.add_column()
        table.add_column(justify="right")
        shown = gpu.devices[:8]
        for d in shown:
            used = d.memory_used or 0
            frac = used / d.memory_total if d.memory_total else 0.0
            extra = []
            if d.utilization is not None:
                extra.append(f"{d.utilization}%")
            if d.temperature is not None:
                extra.append(f"{d.temperature}°")
            if d.processes:
                extra.append(f"{len(d.processes)}p")
            table.add_row(
                str(d.index),
                Text(short_name(d.name), style="bold"),
                bar(frac, 6),
                f"{gib(used)}/{gib(d.memory_total)}G " + " ".join(extra),
            )
        lines.append(table)
        if len(gpu.devices) > len(shown):
            lines.append(Text(f"… and {len(gpu.devices) - len(shown)} more", style="dim"))
        self.update(RichGroup(*lines))


class ModelPanel(Static):
    """Architecture, shape, context, dtype, weights, SALA facts and the remote-code status."""

    def show_loading(self, source: str) -> None:
        self.set_class(False, "-error")
        self.update(Text(f"loading {source}…", style="dim"))

    def show_empty(self) -> None:
        self.set_class(False, "-error")
        self.update(
            Text("no model yet: ctrl+o opens a folder, a cached repo or an example", style="dim")
        )

    def show_error(self, message: str, *, kept: str | None = None) -> None:
        """A model that could not be read (`message` names it) and the one still checked."""
        self.set_class(True, "-error")
        still = f"\nstill checking against the previous model, {kept}" if kept else ""
        self.update(
            Text.assemble(
                ("✗ ", "bold red"),
                (message, "red"),
                (still, "yellow"),
                ("\nctrl+o to open another model", "dim"),
            )
        )

    def show_not_cached(self, note: str) -> None:
        """The launch's model is a repo sglang will download: checked without its config."""
        self.set_class(False, "-error")
        self.update(
            Text.assemble(
                ("! ", "bold yellow"),
                (note, "yellow"),
                ("\nthe rules that need the model's shape are skipped", "dim"),
                ("\nctrl+o to open a local copy instead", "dim"),
            )
        )

    def show(self, facts: ModelFacts, *, trust_remote_code: bool, note: str | None = None) -> None:
        """`note`: how the facts were read when that is not the model's own config (a bundled
        copy of a repo that is not in the local cache)."""
        self.set_class(False, "-error")
        t = Table.grid(padding=(0, 1))
        t.add_column(style="dim", justify="right")
        t.add_column()
        t.add_row("model", Text(facts.source, style="bold"))
        t.add_row("arch", Text(facts.architecture or "?", style="bold"))
        t.add_row("type", facts.model_type or "?")
        shape = f"{facts.num_hidden_layers} layers · {facts.num_attention_heads} heads · {facts.num_key_value_heads} KV heads"
        t.add_row("shape", shape)
        ctx = f"{facts.context_length:,}" if facts.context_length else "?"
        t.add_row(
            "context",
            f"{ctx} tokens · {facts.dtype or '?'}"
            + (f" · {facts.quantization}" if facts.quantization else ""),
        )
        if facts.weight_bytes:
            t.add_row("weights", f"{facts.weight_bytes / 1e9:.1f} GB ({facts.weight_source})")
        if facts.is_minicpm_sala and facts.mixer_types:
            n_sparse = sum(1 for m in facts.mixer_types if m == "minicpm4")
            n_light = len(facts.mixer_types) - n_sparse
            t.add_row(
                "SALA",
                Text.assemble(
                    ("sparse " + ("yes" if facts.has_minicpm_sparse_attention else "no"), "bold"),
                    " · ",
                    ("lightning " + ("yes" if facts.has_lightning_layers else "no"), "bold"),
                    (f"  ({n_sparse} attention / {n_light} lightning layers)", "dim"),
                ),
            )
        if facts.needs_remote_code:
            status = (
                Text("needs --trust-remote-code: on", style="green")
                if trust_remote_code
                else Text(
                    "needs --trust-remote-code (custom code in auto_map)", style="bold yellow"
                )
            )
            t.add_row("code", status)
        elif facts.has_auto_map:
            t.add_row(
                "code",
                Text("auto_map present, transformers knows the type: no remote code", style="dim"),
            )
        else:
            t.add_row("code", Text("no remote code", style="dim"))
        if facts.config_error:
            t.add_row("config", Text(facts.config_error, style="red"))
        if note:
            t.add_row("config", Text(note, style="yellow"))
        self.update(t)


class CommandPreview(Static):
    """The exact launch line (or sglang --config YAML)."""

    def show(self, text: str, *, mode: str) -> None:
        label = {"command": "launch command", "nodes": "launch command per node"}.get(
            mode, "sglang --config YAML"
        )
        self.border_title = f"{label}  (c copy · y toggle)"
        self.set_class(mode == "yaml", "-yaml")
        self.update(Text(text))
