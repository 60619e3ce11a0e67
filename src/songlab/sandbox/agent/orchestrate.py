"""Run a plan: make the sub-tool calls turn by turn, apply the caps, count tokens, build the trace.

This module knows nothing of HTTP, SQL or billing: the sandbox hands it a
:class:`SubTools` (make one sub-task of the same account and wait for it, say
which tool id a pair has, emit a progress event) and gets back a
:class:`AgentOutcome` to store and bill. Its rules:

* each turn is one model call that reads the whole conversation so far (system
  prompt, prompt, earlier turns and tool results) and writes its prose and its
  calls; the final answer is one more model call (:mod:`.tokens`);
* ``max_steps`` is checked *before* a call: calls beyond the cap are not made;
* ``max_budget`` is checked *after* each turn's calls settle: once the cost so
  far (fee so far + sub-tool costs) reaches it, later turns are not run;
* a call whose input came from a failed or unmade call is not made;
* the fee is tokens at the tier's rates plus 0.001 per call made (failed too).

The trace lists only the calls that were made (so counting its ``tool_call``
steps counts the calls billed 0.001 each); what was left undone is said in the
final answer and listed under the trace's extra key ``not_done``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from songlab.sandbox.agent.budget import Caps
from songlab.sandbox.agent.plan import Call, Plan, Ref, Result, Text, UnresolvedRef, resolve
from songlab.sandbox.agent.prose import capitalize
from songlab.sandbox.agent.request import AgentRequest
from songlab.sandbox.agent.tokens import Usage
from songlab.sandbox.agent.trace import Trace, money

__all__ = ["AgentOutcome", "DEFAULT_PERSONA", "SubTools", "run_plan"]

DEFAULT_PERSONA = (
    "You are Agent One, a music production assistant. Plan the work, call the tools "
    "of the catalog in order, check what they return, and answer briefly."
)


class SubTools(Protocol):
    """What the runner needs from the sandbox."""

    def tool_id(self, operation: str, model: str) -> str | None: ...

    def call(self, operation: str, model: str, payload: dict[str, Any]) -> Result: ...

    def progress(
        self, *, step: str, phase: str, index: int, message: str, fraction: float
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class AgentOutcome:
    text: str
    trace: dict[str, Any]
    fee: Decimal
    sub_tool_cost: Decimal
    calls_made: int
    stopped_by: str | None

    @property
    def total(self) -> Decimal:
        return self.fee + self.sub_tool_cost

    @property
    def metadata_json(self) -> str:
        return Trace.dumps(self.trace)


def _clip(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _calls(n: int) -> str:
    return f"{n} tool call" + ("" if n == 1 else "s")


def _placeholder(value: Any) -> Any:
    """A planned payload with refs shown as ``${call.file}`` placeholders (workflows)."""
    if isinstance(value, Ref):
        return "${" + f"{value.call}.{value.what}" + "}"
    if isinstance(value, Text):
        return "".join(p if isinstance(p, str) else _placeholder(p) for p in value.parts)
    if isinstance(value, Mapping):
        return {k: _placeholder(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_placeholder(v) for v in value]
    return value


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def _verify_note(call: Call, res: Result | None, expected: str | None) -> str:
    if res is None or res.status != "completed":
        why = "not made" if res is None else f"failed: {res.error or 'no detail'}"
        return f"{call.purpose.removeprefix('verify: ')}: could not verify ({why})"
    if call.verify_against is not None and expected is not None:
        want = _words(expected)
        got = Counter(_words(res.text or ""))
        hits = sum(min(n, got[w]) for w, n in Counter(want).items())
        if not want:
            return "lyrics not verified: the written lyrics hold no words to compare"
        share = round(100 * hits / len(want))
        verdict = "verified" if share >= 80 else "mismatch"
        return f"lyrics {verdict}: the transcription holds {share}% of the written words"
    return f"copyright check: {_clip(res.text or 'no match reported', 200)}"


class _Run:
    def __init__(self, plan: Plan, req: AgentRequest, tools: SubTools) -> None:
        self.plan, self.req, self.tools = plan, req, tools
        self.caps = Caps.of(plan.tier, max_steps=req.max_steps, max_budget=req.max_budget)
        self.usage = Usage()
        self.trace = Trace()
        self.context: list[str] = [req.system_prompt or DEFAULT_PERSONA, req.prompt]
        self.results: dict[str, Result] = {}
        self.lines: list[str] = []  # final-answer lines, one per call made
        self.undone: list[dict[str, str]] = []  # planned calls not made, and why
        self.calls_made = 0
        self.sub_cost = Decimal(0)
        self.stopped_by: str | None = None
        self.stop_note = ""
        self.total_calls = len(plan.calls)

    def spent(self) -> Decimal:
        return self.usage.fee(self.plan.tier, sub_tool_calls=self.calls_made) + self.sub_cost

    def skip(self, call: Call, reason: str) -> None:
        """A planned call not made: no trace step (it was never called), said in the answer."""
        self.undone.append({"tool": call.operation, "purpose": call.purpose, "reason": reason})

    def make(self, call: Call, payload: dict[str, Any]) -> None:
        index = len(self.trace.steps)
        fraction = self.calls_made / max(self.total_calls, 1)
        self.tools.progress(
            step=call.operation,
            phase="started",
            index=index,
            message=f"calling {call.operation}: {call.purpose.removeprefix('verify: ')}",
            fraction=fraction,
        )
        res = self.tools.call(call.operation, call.model, payload)
        self.calls_made += 1
        self.results[call.key] = res
        cost = Decimal(res.cost_usd or 0) if res.status == "completed" else Decimal(0)
        self.sub_cost += cost
        text = res.text or ""
        if res.status != "completed":
            text = f"failed: {res.error or 'no detail'}"
        elif not text and res.assets:
            text = f"{len(res.assets)} file(s): " + ", ".join(name for name, _ in res.assets)
        self.trace.tool_call(
            tool=call.operation,
            tool_id=res.tool_id,
            status=res.status,
            cost=cost,
            task_id=res.task_id,
            file_ids=res.file_ids,
            text=text,
        )
        summary = {
            "call": call.key,
            "tool": call.operation,
            "status": res.status,
            "file_ids": res.file_ids,
            "text": _clip(text, 500),
        }
        self.context.append(json.dumps(summary, ensure_ascii=False))
        done = self.calls_made / max(self.total_calls, 1)
        self.tools.progress(
            step=call.operation,
            phase="finished",
            index=index,
            message=f"{call.operation} {res.status}",
            fraction=min(done, 1.0),
        )
        what = capitalize(call.purpose.removeprefix("verify: "))
        if res.status == "completed":
            files = f" (files: {', '.join(res.file_ids)})" if res.file_ids else ""
            said = f" {_clip(res.text, 300)}" if res.text else ""
            self.lines.append(f"- {what}: done{files}.{said}")
        else:
            self.lines.append(f"- {what}: failed ({res.error or 'no detail'}).")

    def turn(self, turn_index: int) -> None:
        turn = self.plan.turns[turn_index]
        # each call of the turn, in plan order: its payload, or why it is not made
        todo: list[tuple[Call, dict[str, Any] | None, str]] = []
        room = max(0, self.caps.max_steps - self.calls_made)
        for call in turn.calls:
            try:
                payload = resolve(call.payload, self.results)
            except UnresolvedRef as exc:
                todo.append((call, None, f"its input is missing because {exc}"))
                continue
            if room == 0:
                todo.append((call, None, f"the step cap of {self.caps.max_steps} was reached"))
                self.stopped_by = "max_steps"
                self.stop_note = (
                    f"Stopped: the step cap of {_calls(self.caps.max_steps)} was reached, "
                    f"so I made {_calls(self.calls_made + sum(p is not None for _, p, _ in todo))} "
                    "and left the rest undone."
                )
                continue
            room -= 1
            todo.append((call, payload, ""))
        written = "\n".join(
            [turn.prose]
            + [
                json.dumps({"tool": c.operation, "model": c.model, "input": p}, ensure_ascii=False)
                for c, p, _ in todo
                if p is not None
            ]
        )
        self.usage.model_call(self.context, written)
        self.context.append(written)
        self.trace.prose(turn.prose)
        for call, payload, reason in todo:
            if payload is None:
                self.skip(call, reason)
            else:
                self.make(call, payload)
        if turn.kind == "verification":
            notes = []
            for call in turn.calls:
                expected = None
                if call.verify_against is not None:
                    try:
                        expected = resolve(call.verify_against, self.results)
                    except UnresolvedRef:
                        expected = None
                notes.append(_verify_note(call, self.results.get(call.key), expected))
            note = (
                "Verification: "
                + ("; ".join(notes) if notes else "the answer covers every part of the request")
                + "."
            )
            self.usage.model_call(self.context, note)
            self.context.append(note)
            self.trace.verification(note)
            self.lines.append(note)

    def skip_rest(self, start: int, reason: str) -> None:
        for turn in self.plan.turns[start:]:
            for call in turn.calls:
                self.skip(call, reason)

    def execute(self) -> AgentOutcome:
        turns = self.plan.turns
        for i in range(len(turns)):
            self.turn(i)
            if self.stopped_by:
                self.skip_rest(i + 1, f"the step cap of {self.caps.max_steps} was reached")
                break
            if i + 1 < len(turns) and self.caps.budget_reached(self.spent()):
                self.stopped_by = "budget"
                cents = self.req.max_budget
                self.stop_note = (
                    f"Stopped: the budget of {cents} cents was reached after turn {i + 1} "
                    f"(spent ${money(self.spent())}), so I left the rest undone; what was "
                    "spent stays charged."
                )
                self.skip_rest(i + 1, "the budget was reached")
                break
        return self.finish(self.answer())

    def answer(self) -> str:
        if not self.plan.calls and not self.plan.dropped:
            return (
                "I found nothing in this prompt for the tools to do. I can write lyrics, make a song, "
                "music or a cappella singing, extend, remix or add an effect to audio, separate stems, "
                "transcribe, check copyright, make sound effects, search the web, translate lyrics and mix."
            )
        parts = [self.stop_note] if self.stop_note else []
        parts.append(self.plan.summary)
        parts.extend(self.lines)
        if self.undone:
            parts.append(
                "Left undone: "
                + "; ".join(
                    f"{u['purpose'].removeprefix('verify: ')} ({u['reason']})" for u in self.undone
                )
                + "."
            )
        if self.plan.dropped:
            parts.append(
                "Flash makes one tool call per run, so I left out: "
                + "; ".join(self.plan.dropped)
                + ". Use standard or pro for the whole plan."
            )
        return "\n".join(parts)

    def finish(self, text: str) -> AgentOutcome:
        self.usage.model_call(self.context, text)
        self.trace.prose(text)
        fee = self.usage.fee(self.plan.tier, sub_tool_calls=self.calls_made)
        trace = self.trace.finish(
            usage=self.usage.as_dict(),
            agent_fee=fee,
            total_cost=fee + self.sub_cost,
            stopped_by=self.stopped_by,
            extra={"not_done": self.undone} if self.undone else None,
        )
        return AgentOutcome(text, trace, fee, self.sub_cost, self.calls_made, self.stopped_by)

    def build_only(self) -> AgentOutcome:
        steps: list[dict[str, Any]] = []
        for call in self.plan.calls:
            tid = self.tools.tool_id(call.operation, call.model)
            steps.append(
                {
                    "index": len(steps),
                    "tool": call.operation,
                    "model": call.model,
                    "tool_id": tid,
                    "input": _placeholder(dict(call.payload)),
                    "depends_on": list(call.deps),
                    "purpose": call.purpose,
                }
            )
        blob = json.dumps({"tier": self.plan.tier, "steps": steps}, sort_keys=True)
        wf_id = "wf_" + hashlib.sha256(blob.encode()).hexdigest()[:16]
        self.trace.prose(self.plan.summary)  # the planned calls are the workflow's steps
        text = (
            f"I saved workflow {wf_id} with {len(steps)} step{'' if len(steps) == 1 else 's'}; "
            "nothing was run and no sub-tool was billed.\n"
            + "\n".join(
                f"{s['index'] + 1}. {capitalize(s['purpose'])} ({s['tool']}, {s['model']})."
                for s in steps
            )
        )
        self.usage.model_call(self.context, text)
        self.trace.prose(text)
        fee = self.usage.fee(self.plan.tier, sub_tool_calls=0)
        workflow = {"workflow_id": wf_id, "tier": self.plan.tier, "steps": steps}
        trace = self.trace.finish(
            usage=self.usage.as_dict(),
            agent_fee=fee,
            total_cost=fee,
            stopped_by=None,
            extra={"workflow": workflow},
        )
        return AgentOutcome(text, trace, fee, Decimal(0), 0, None)


def run_plan(plan: Plan, req: AgentRequest, tools: SubTools) -> AgentOutcome:
    """Run ``plan`` for ``req`` with ``tools`` (or only save it, for ``workflow_build_only``)."""
    run = _Run(plan, req, tools)
    return run.build_only() if req.workflow_build_only else run.execute()
