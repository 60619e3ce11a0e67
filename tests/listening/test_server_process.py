"""A real ``listening.serve`` process killed with SIGKILL between answers and started again on
the same inbox: every answer is there, none overwritten, the links still work, and the
server still knows what each rater sent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest
import soundfile as sf

from songlab.listening import campaign, load_campaign, simulate
from tests.listening.listening_signals import make_clips

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SERVER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import soundfile as sf
    from songlab import listening

    folder, port = Path(sys.argv[1]), int(sys.argv[2])
    models = sorted(p.name for p in (folder / "clips").iterdir())
    clips = {
        m: [sf.read(p, dtype="float32") for p in sorted((folder / "clips" / m).glob("*.wav"))]
        for m in models
    }
    c = listening.load_campaign(folder / "campaign.json", clips)
    srv = listening.serve(c, port=port, inbox=folder / "inbox")
    print(srv.url, flush=True)
    while True:
        time.sleep(60)
    """
)


def _start(folder: Path, port: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(folder), str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    line = proc.stdout.readline().strip() if proc.stdout else ""
    if not line.startswith("http://"):
        proc.kill()
        raise AssertionError(
            f"the server did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}"
        )
    return proc, line


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert proc.returncode == -signal.SIGKILL


def test_answers_survive_sigkill_and_restart(tmp_path) -> None:
    clips = make_clips(2, seconds=1.0)
    for model, takes in clips.items():
        (tmp_path / "clips" / model).mkdir(parents=True)
        for i, (audio, sr) in enumerate(takes):
            sf.write(tmp_path / "clips" / model / f"{i}.wav", audio, sr, subtype="FLOAT")
    c = campaign("abx", clips, raters=3, seed=8, gold=1, traps=0)
    c.save(tmp_path / "campaign.json")

    def answers(rater, upto=None):
        s = c._sessions[rater].sibling(c._rater_seeds[rater])
        simulate(s, seed=1)
        done = dict(list(s.answers.items())[:upto]) if upto else s.answers
        return json.dumps(c.answer_file(rater, done)).encode()

    first, full = answers("r01", upto=2), answers("r01")
    started = time.time()
    proc, url = _start(tmp_path, 0)
    port = int(url.rsplit(":", 1)[1])
    try:
        with httpx.Client(timeout=20) as http:
            r = http.post(f"{url}/answers", content=first)
            assert r.status_code == 200 and r.json()["message"] == "Received 2 answers. Thank you."
        _kill(proc)
        proc, again = _start(tmp_path, port)  # the same address: the raters' links still work
        assert again == url
        with httpx.Client(timeout=20) as http:
            # the restarted server knows what r01 sent before the kill
            assert (
                http.post(f"{url}/answers", content=first)
                .json()["message"]
                .startswith("Already received")
            )
            assert http.post(f"{url}/answers", content=full).status_code == 200
            assert http.post(f"{url}/answers", content=answers("r02")).status_code == 200
            link = next(u for r, u in _links(c, url).items() if r == "r03")
            assert http.get(link).status_code == 200
        _kill(proc)
        # when r03's page was first served outlives the kill (the too-fast rule reads it);
        # moved an hour back, as if r03 took that long to listen
        issued = tmp_path / "inbox" / f"issued-{c.public_id('r03')}.txt"
        served = float(issued.read_text(encoding="ascii"))
        assert started <= served <= time.time()
        issued.write_text(repr(served - 3600), encoding="ascii")
        proc, _ = _start(tmp_path, port)
        with httpx.Client(timeout=20) as http:
            r = http.post(f"{url}/answers", content=answers("r03"))
            assert r.status_code == 200 and r.json()["message"].startswith("Received")
    finally:
        if proc.poll() is None:
            _kill(proc)
    inbox = tmp_path / "inbox"
    kept = sorted(p.name for p in inbox.glob("*.json"))
    assert len(kept) == 4 == len(set(kept))  # r01's two files, r02's, r03's: none overwritten
    assert {json.loads((inbox / k).read_bytes())["mac"] for k in kept} == {
        json.loads(answers(r, upto))["mac"]
        for r, upto in (("r01", 2), ("r01", None), ("r02", None), ("r03", None))
    }
    organiser = load_campaign(tmp_path / "campaign.json", clips)
    frame = organiser.collect(inbox)
    assert set(frame["rater"]) == {"r01", "r02", "r03"}
    assert organiser.progress().set_index("rater").loc["r01", "answered"] == len(
        c._sessions["r01"].trials
    )


def _links(c, url: str) -> dict[str, str]:
    from songlab.listening import CampaignServer

    return {r: u.replace(CampaignServer(c).url, url) for r, u in CampaignServer(c).links().items()}
