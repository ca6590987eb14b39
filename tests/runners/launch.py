"""Run a scenario script's ``async def main()`` with exactly the runner named.

    python tests/runners/launch.py asyncio|uvloop|trio SCRIPT [ARGS...]

``asyncio``: ``asyncio.run(main())``; ``uvloop``: ``uvloop.run(main())``; ``trio``:
``trio.run(main)``. Never ``anyio.run``: what anyio's runner sets up (sniffio's context
variable, which asyncio callbacks then inherit) must not be what makes a scenario pass,
so this checks that nothing set it. The script sees the runner's name in
``SCENARIO_RUNNER`` (its subprocesses inherit it) and its own arguments in ``sys.argv``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

RUNNERS = ("asyncio", "uvloop", "trio")


def _load(script: Path) -> Callable[[], Awaitable[None]]:
    spec = importlib.util.spec_from_file_location(f"scenario_{script.stem}", script)
    assert spec is not None, script
    assert spec.loader is not None, script
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    main: Callable[[], Awaitable[None]] = module.main
    return main


def _check_runner(runner: str) -> None:
    """Inside the loop: it is the runner asked for, and anyio's runner is not in play."""
    import sniffio

    assert sniffio.current_async_library_cvar.get() is None, "anyio.run set sniffio up"
    if runner != "trio":
        loop = type(asyncio.get_running_loop())
        is_uvloop = loop.__module__.startswith("uvloop")
        assert is_uvloop == (runner == "uvloop"), f"{runner} runs on {loop.__module__}"


def run(runner: str, main: Callable[[], Awaitable[None]]) -> None:
    async def checked() -> None:
        _check_runner(runner)
        await main()

    if runner == "asyncio":
        asyncio.run(checked())
    elif runner == "uvloop":
        import uvloop

        uvloop.run(checked())
    elif runner == "trio":
        import trio

        trio.run(checked)
    else:
        raise SystemExit(f"runner must be one of {', '.join(RUNNERS)}, not {runner!r}")


def launch(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit(f"usage: launch.py {{{','.join(RUNNERS)}}} SCRIPT [ARGS...]")
    runner, script = argv[0], Path(argv[1]).resolve()
    os.environ["SCENARIO_RUNNER"] = runner
    sys.argv = [str(script), *argv[2:]]
    sys.path.insert(0, str(script.parent))  # the scripts share common.py
    try:
        run(runner, _load(script))
    except KeyboardInterrupt:  # Ctrl-C: the runner has cancelled and cleaned up
        print("interrupted", file=sys.stderr, flush=True)
        raise SystemExit(130) from None


if __name__ == "__main__":
    launch(sys.argv[1:])
