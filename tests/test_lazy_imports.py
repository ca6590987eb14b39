"""Importing the package is cheap: the public names load on first use (PEP 562).

No timing here: what is checked is *what* an import loads, in a fresh interpreter, and
that every public name still resolves, to the object of the module that defines it.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from types import ModuleType

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "assistant_frames"

#: Third-party packages that a frame or a worker does not need.
HEAVY = ["mcp", "mcp_types", "nats", "starlette", "websockets", "pydantic_ai", "jsonschema"]

#: Our optional parts: MCP, MCP Apps, widgets, NATS, ASGI, WebSockets.
OPTIONAL = [
    "assistant_frames.apps",
    "assistant_frames.asgi",
    "assistant_frames.mcp",
    "assistant_frames.nats",
    "assistant_frames.transports.websocket",
    "assistant_frames.widgets",
]

#: What neither a frame nor a host needs unless it asks for it.
ON_REQUEST = [*OPTIONAL, "assistant_frames.federation", "assistant_frames.formats"]

#: The packages whose names load on first use (each has a ``_LAZY`` table).
LAZY_PACKAGES = [
    "assistant_frames",
    "assistant_frames.apps",
    "assistant_frames.asgi",
    "assistant_frames.federation",
    "assistant_frames.formats",
    "assistant_frames.frames",
    "assistant_frames.mcp",
    "assistant_frames.registry",
    "assistant_frames.transports",
    "assistant_frames.widgets",
]

#: Every package with an ``__all__``: each of its names must resolve.
PUBLIC_PACKAGES = [
    *LAZY_PACKAGES,
    "assistant_frames.apps.protocol",
    "assistant_frames.browser",
    "assistant_frames.cli",
    "assistant_frames.nats",
    "assistant_frames.transports.websocket",
]


def _loaded_after(code: str) -> set[str]:
    """The modules that ``code`` adds to ``sys.modules`` in a fresh interpreter (beyond
    what the interpreter loads by itself)."""
    probe = "import json, sys\nprint(json.dumps(sorted(sys.modules)))"
    loaded: list[set[str]] = []
    for script in (probe, f"{code}\n{probe}"):
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        loaded.append(set(json.loads(done.stdout.splitlines()[-1])))
    return loaded[1] - loaded[0]


def _under(modules: set[str], names: list[str]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(f"{n}.") for n in names))


def test_importing_the_package_loads_nothing_else() -> None:
    loaded = _loaded_after("import assistant_frames")
    assert _under(loaded, ["assistant_frames"]) == ["assistant_frames", "assistant_frames._lazy"]
    assert _under(loaded, [*HEAVY, "pydantic", "anyio", "asyncio", "typing"]) == []


#: Pydantic models that a worker does not build before it is sent one of their messages
#: or is given a tool with annotations.
FIRST_USE = ["assistant_frames.frames._messages", "assistant_frames.registry.annotations"]


def test_a_worker_loads_only_the_frame_side() -> None:
    loaded = _loaded_after(
        "from assistant_frames import ModelContextRegistry\n"
        "from assistant_frames.frames import serve_stdio"
    )
    assert "assistant_frames.frames.worker" in loaded
    host_side = ["assistant_frames.frames.host", "assistant_frames.frames.reconnect"]
    assert _under(loaded, [*HEAVY, *ON_REQUEST, *host_side, *FIRST_USE]) == []


#: Standard-library modules that a worker's start once imported for one rare use each: an
#: id (uuid, and its platform), the fallback JSON codec, a command or URL in a message.
RARELY_USED = ["json", "platform", "shlex", "urllib.parse", "uuid"]


def test_a_worker_imports_no_standard_module_it_uses_only_rarely() -> None:
    script = (
        "from assistant_frames import ModelContextRegistry\n"
        "from assistant_frames.frames import serve_stdio\n"
        "import sys\n"
        "print(repr(sorted(sys.modules)))"  # not through json: it is one of them
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded = set(ast.literal_eval(done.stdout.splitlines()[-1]))
    assert "assistant_frames.frames.provider" in loaded
    assert sorted(loaded.intersection(RARELY_USED)) == []


def test_a_worker_imports_no_pydantic_before_a_tool_is_called() -> None:
    """Tools with plain parameters get their schema without Pydantic (pydantic-core, the
    JSON codec, is loaded): it and the model that validates their arguments wait for
    the first call."""
    loaded = _loaded_after(
        "from assistant_frames import ModelContextRegistry\n"
        "from assistant_frames.frames import serve_stdio\n"
        "registry = ModelContextRegistry()\n"
        "@registry.tool\n"
        "def add(a: int, b: int = 1, note: str | None = None) -> int:\n"
        "    return a + b\n"
        "assert registry.get_model_context().tools['add'].parameters['required'] == ['a']"
    )
    assert _under(loaded, ["pydantic", "annotated_types", "typing_inspection", *FIRST_USE]) == []


def test_a_host_loads_neither_the_worker_side_nor_what_it_did_not_ask_for() -> None:
    loaded = _loaded_after("from assistant_frames import AssistantFrameHost, memory_pair")
    assert "assistant_frames.frames.host" in loaded
    worker_side = ["assistant_frames.frames.worker", "assistant_frames.transports.stdio"]
    assert _under(loaded, [*HEAVY, *ON_REQUEST, *worker_side]) == []


@pytest.mark.parametrize("name", PUBLIC_PACKAGES)
def test_every_public_name_resolves(name: str) -> None:
    package = importlib.import_module(name)
    with warnings.catch_warnings():
        # transports.serve_stdio: a deprecated alias, in __all__ until it goes.
        warnings.simplefilter("ignore", DeprecationWarning)
        missing = [n for n in package.__all__ if not hasattr(package, n)]
    assert missing == []
    assert len(set(package.__all__)) == len(package.__all__)


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_lazy_names_are_the_defining_modules_objects(name: str) -> None:
    package = importlib.import_module(name)
    table: dict[str, str] = package._LAZY
    for public, module in table.items():
        value = getattr(package, public)
        if not module:  # a submodule
            assert isinstance(value, ModuleType)
            assert value.__name__ == f"{name}.{public}"
            continue
        home = importlib.import_module(module, name)
        assert value is getattr(home, public), public
    assert set(table) <= set(dir(package))
    assert set(package.__all__) - set(table) <= {"__version__", "serve_stdio"}


def _type_checking_imports(path: Path) -> dict[str, str]:
    """{name: relative module} of the ``if TYPE_CHECKING:`` imports of an ``__init__``."""
    found: dict[str, str] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not (isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING"):
            continue
        for inner in node.body:
            if isinstance(inner, ast.ImportFrom) and inner.level == 1:
                for alias in inner.names:
                    module = f".{inner.module}" if inner.module else ""
                    found[alias.asname or alias.name] = module
    return found


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_type_checkers_see_every_lazy_name(name: str) -> None:
    """The ``if TYPE_CHECKING:`` imports (for mypy and IDEs) are the ``_LAZY`` table."""
    package = importlib.import_module(name)
    path = PACKAGE.joinpath(*name.split(".")[1:], "__init__.py")
    assert _type_checking_imports(path) == package._LAZY


def test_a_former_name_loads_the_new_one_and_warns_where_it_is_used() -> None:
    code = textwrap.dedent(
        """
        import sys, warnings
        import assistant_frames.mcp as package
        assert "assistant_frames.mcp.frame" not in sys.modules
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            old = package.MCPFrame
        assert old is package.MCPFrameHost
        assert [(w.category, w.filename) for w in caught] == [(DeprecationWarning, "<string>")]
        print(caught[0].message)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "assistant_frames.mcp.MCPFrame is deprecated and goes in the next minor release; "
        "use assistant_frames.mcp.MCPFrameHost"
    )


def test_the_version_and_the_former_side_effect_submodules() -> None:
    code = textwrap.dedent(
        """
        import assistant_frames
        print(assistant_frames.__version__)
        print(assistant_frames.transports.spawn_worker.__module__)
        print("__version__" in dir(assistant_frames))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    version, spawn_module, listed = done.stdout.split()
    assert version
    assert spawn_module == "assistant_frames.transports.worker_process"
    assert listed == "True"
