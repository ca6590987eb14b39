"""Fuzzing through the real WebSocket and stdio transports (test_fuzz.py uses memory_pair()).

At least 10,000 hostile messages per transport and direction cross real sockets and pipes,
where garbage can also be what no JSON encoder produces: text that is not JSON, binary and
fragmented WebSocket frames, pings, numbers and nesting beyond parsers' limits, escaped lone
surrogates, NaN tokens, overlong and non-UTF-8 lines. A seeded ``random.Random`` keeps the
flood fast and reproducible. After each flood the same connection, and the same server or
worker, must still serve valid traffic with exact results.

Raw WebSocket peers are websockets' sans-I/O protocols over anyio TCP streams, so they run
on asyncio and trio alike and can send frames the library never would.
"""

from __future__ import annotations

import json
import math
import random
import string
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from anyio.abc import SocketAttribute
from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.http11 import Request, Response
from websockets.protocol import Protocol
from websockets.server import ServerProtocol
from websockets.uri import parse_uri

from assistant_frames import (
    AssistantFrameHost,
    AssistantFrameProvider,
    FrameDisconnected,
    ModelContextRegistry,
    ToolCallError,
)
from assistant_frames.frames.protocol import serialize_context
from assistant_frames.transports import connect_websocket, spawn_worker, websocket_server

from helpers import CHANNEL, EMPTY_OBJECT, MESSAGE_TYPES, Outcome, envelope, wait_until

pytestmark = pytest.mark.anyio

SEED = 20_260_509
MESSAGES = 10_000  # hostile messages per transport and direction
CHECK_EVERY = 250  # a valid call rides along this often in the WebSocket flood
LIMIT = 60.0  # bound on each test; they take a few seconds
WAIT = 15.0  # bound on waiting for one expected message
CLOSE_WAIT = 2.0  # how long a peer that must close gets to do it
CALL_TIMEOUT = 30.0  # far above every bound the tests assert on
MAX_LINE = 64 * 1024  # max_message_bytes of the stdio peers, so overlong lines stay cheap
SYSTEM = "The frame under fuzz."
UNICODE_TEXT = "ünïcödé ✓ 中文 𝄞 😀 \u202e"  # multi-byte characters for splits to land in
ID_MARK = "@@KNOWN-ID@@"  # stands for a pending call's id in texts written ahead of time
RESERVED = ("check-", "probe-")  # garbage ids never start with these

PRINTABLE = string.printable
UNICODE = ("é", "ß", "✓", "中文", "𝄞", "😀", "\u0301", "\u200b", "\u202e", "\ufeff", "\uffff")
UNICODE += ("\U0010ffff", "\x00", "\x7f", "\u2028", "\x1b")
SURROGATES = ("\ud800", "\udbff", "\udc00", "\udfff")
TOOLS = ("add", "echo", "slow", "upper")
WORDS = (*MESSAGE_TYPES, CHANNEL, *TOOLS, "nope", "channel", "message", "type", "id", "toolName")
WORDS += ("args", "context", "result", "error", "system", "tools", "parameters", "__proto__")
WORDS += ("constructor", "toString", "null", "NaN", "")
BAD_CHANNELS: tuple[Any, ...] = ("", "assistant-ui-frame ", "Assistant-UI-Frame", "mcp")
BAD_CHANNELS += ("assistant-ui-frame\x00", "assistant_ui_frame", None, 1, [CHANNEL], {"a": 1})
NEAR_TYPES: tuple[Any, ...] = ("tool-results", "Tool-Result", "tool_result", " tool-result")
NEAR_TYPES += ("tool-result\x00", "tool-call", "model-context-update", None, 7, ["tool-result"])
INVALID_UTF8 = (b"\xff", b"\xfe", b"\x80", b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf")
INVALID_UTF8 += (b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80")
INVALID_UTF8 += (b"\xe2\x82", b"\xf0\x9f\x98")

# Raw JSON-ish tokens put where a value belongs ("@" marks the slots in the templates).
TOKENS = ("NaN", "-NaN", "Infinity", "-Infinity", "+Infinity", "nan", "inf", "-inf", "Inf")
TOKENS += ("undefined", "None", "True", "nul", "truE", "1e999", "-1e999", "1e-999", "-0", "-0.0")
TOKENS += ("1e2147483648", "0e0", "1E+2", "01", "1.", ".5", "+1", "--1", "1e", "0x1F", "1_000")
TOKENS += ('"\\ud800"', '"\\udfff"', '"a\\ud800b"', '"\\udc00\\ud800"', '"\\ud83d\\ude00"')
TOKENS += ('"\\ud83d\\u0041"', '"\\u0000"', '"\\x41"', '"\\u12"', '"\\uZZZZ"', '"tab\there"')
TOKENS += ('"\\\\\\"', "'single'", '"unterminated', "[]", "{}", '""', "[1,]", '{"a":1,}')
TOKENS += ('{"a"}', "[,]", "{,}", "\u0661")  # an Arabic-Indic digit one
TO_FRAME_TEMPLATES = (
    '{"channel":"assistant-ui-frame","message":{"type":"tool-call","id":@,"toolName":"add",'
    '"args":{"a":1,"b":2}}}',
    '{"channel":"assistant-ui-frame","message":{"type":"tool-call","id":"slot","toolName":"add",'
    '"args":{"a":@,"b":2}}}',
    '{"channel":"assistant-ui-frame","message":{"type":"tool-call","id":"slot","toolName":"echo",'
    '"args":{"text":@}}}',
    '{"channel":"assistant-ui-frame","message":{"type":"tool-call","id":@,"toolName":@,"args":@}}',
    '{"channel":"assistant-ui-frame","message":{"type":"tool-cancel","id":@}}',
    '{"channel":"assistant-ui-frame","message":@}',
    '{"channel":@,"message":{"type":"model-context-request"}}',
    "@",
)
TO_HOST_TEMPLATES = (
    '{"channel":"assistant-ui-frame","message":{"type":"tool-result","id":@,"result":1}}',
    '{"channel":"assistant-ui-frame","message":{"type":"tool-result","id":"slot","result":@}}',
    '{"channel":"assistant-ui-frame","message":{"type":"tool-result","id":"slot","error":@}}',
    '{"channel":"assistant-ui-frame","message":{"type":"model-context-update","context":@}}',
    '{"channel":"assistant-ui-frame","message":{"type":"model-context-update","context":'
    '{"system":@,"tools":{"t":{"parameters":@}}}}}',
    '{"channel":"assistant-ui-frame","message":@}',
    "@",
)
SCHEMAS: tuple[Any, ...] = ({"type": "object"}, EMPTY_OBJECT, {"type": 5}, {"$ref": "#/$defs/x"})
SCHEMAS += ({"properties": {"a": {"type": "nope"}}}, {"$schema": "http://json-schema.org/x#"})


# -- the garbage -------------------------------------------------------------------------------


class Garbage:
    """Hostile values, JSON texts, lines and frames from a seeded generator.

    ``to_host`` aims the messages at a host (results and contexts) rather than at a frame
    (calls and cancels). With ``surrogates``, strings may hold lone surrogates; texts then
    carry them as ``\\ud800`` escapes only, since they have no UTF-8 form.
    """

    def __init__(self, seed: int, *, to_host: bool = False, surrogates: bool = True) -> None:
        self.rng = random.Random(seed)
        self.to_host = to_host
        self.surrogates = surrogates
        self.pool = ["dup", "é", "0", "", " ", "dup\x00"]  # ids that keep coming back

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # -- values --------------------------------------------------------------------------

    def string(self, max_len: int = 12, *, surrogates: bool | None = None) -> str:
        rng = self.rng
        if surrogates is None:
            surrogates = self.surrogates
        if self.chance(0.25):
            return rng.choice(WORDS)
        chars = []
        for _ in range(rng.randint(0, max_len)):
            roll = rng.random()
            if roll < 0.55:
                chars.append(rng.choice(PRINTABLE))
            elif roll < 0.85:
                chars.append(rng.choice(UNICODE))
            elif roll < 0.92 and surrogates:
                chars.append(rng.choice(SURROGATES))
            else:
                code = rng.randint(0x80, 0x2FFFF)
                chars.append("?" if 0xD800 <= code <= 0xDFFF else chr(code))
        return "".join(chars)

    def number(self) -> int | float:
        rng = self.rng
        return rng.choice(  # type: ignore[no-any-return]
            (
                0,
                -1,
                rng.randint(-1000, 1000),
                2**31,
                2**53 + 1,
                -(2**63),
                2**64,
                10**30,
                -(10**300),
                -0.0,
                0.5,
                1e308,
                -1e308,
                5e-324,
                math.nan,
                math.inf,
                -math.inf,
                rng.uniform(-1e9, 1e9),
            )
        )

    def scalar(self) -> Any:
        roll = self.rng.random()
        if roll < 0.1:
            return None
        if roll < 0.2:
            return self.chance(0.5)
        if roll < 0.5:
            return self.number()
        return self.string()

    def value(self, depth: int = 0) -> Any:
        roll = self.rng.random()
        if depth >= 3 or roll < 0.5:
            return self.scalar()
        size = self.rng.randint(0, 4)
        if roll < 0.75:
            return [self.value(depth + 1) for _ in range(size)]
        return {self.string(8): self.value(depth + 1) for _ in range(size)}

    def nested(self, depth: int) -> Any:
        """A value ``depth`` levels deep, lists and objects alternating."""
        value = self.scalar()
        for level in range(depth):
            value = [value] if level % 2 else {"k": value}
        return value

    def safe(self, value: Any) -> Any:
        """``value``, unless it is a string that could be one of the tests' own ids."""
        if isinstance(value, str) and value.startswith(RESERVED):
            return "x" + value
        return value

    def call_id(self) -> Any:
        rng = self.rng
        roll = rng.random()
        if roll < 0.25:
            return rng.choice(self.pool)
        if roll < 0.55:
            return self.safe(self.string(16))
        if roll < 0.6:
            return "i" * rng.randint(1_000, 20_000)
        if roll < 0.65:
            return "".join(rng.choices(UNICODE, k=rng.randint(1, 50)))
        if roll < 0.72 and self.surrogates:
            return rng.choice(SURROGATES) + self.string(4)
        return self.safe(self.value())  # mostly not a string at all

    def tool_name(self) -> Any:
        rng = self.rng
        roll = rng.random()
        if roll < 0.45:
            return rng.choice(TOOLS)
        if roll < 0.6:
            return rng.choice(("nope", "", " add", "ADD", "add\x00", "add ", "__proto__"))
        if roll < 0.65:
            return "t" * rng.randint(1_000, 10_000)
        if roll < 0.85:
            return self.string()
        return self.value()

    def args(self) -> Any:
        rng = self.rng
        roll = rng.random()
        if roll < 0.25:
            a = self.number() if self.chance(0.3) else rng.randint(-99, 99)
            return {"a": a, "b": rng.randint(-99, 99)}
        if roll < 0.4:
            return {"text": self.string(40)}
        if roll < 0.5:
            return {"ms": rng.choice((0, 1, 5, 20, -1, 10**9, 1.5, "5", None))}
        if roll < 0.53:
            return {"text": "y" * rng.randint(10_000, 50_000)}
        if roll < 0.58:
            return self.nested(rng.randint(20, 150))  # deeper ones go as raw text
        if roll < 0.7:
            return {"a": self.value(), "b": self.value(), self.string(): self.value()}
        return self.value()

    def context(self) -> Any:
        rng = self.rng
        if self.chance(0.1):
            return self.value()
        context: dict[str, Any] = {}
        if self.chance(0.7):
            context["system"] = self.string(60) if self.chance(0.85) else self.value()
        if self.chance(0.8):
            count = rng.randint(0, 5) if self.chance(0.99) else 200
            tools = {self.string(10): self.tool_spec() for _ in range(count)}
            context["tools"] = tools if self.chance(0.9) else self.value()
        if self.chance(0.1):
            context[rng.choice(("priority", "config", "callSettings", "__proto__"))] = self.value()
        return context

    def tool_spec(self) -> Any:
        rng = self.rng
        if self.chance(0.1):
            return self.value()
        spec: dict[str, Any] = {}
        if self.chance(0.7):
            spec["description"] = self.string(30) if self.chance(0.8) else self.value()
        if self.chance(0.8):
            spec["parameters"] = rng.choice(SCHEMAS) if self.chance(0.6) else self.value()
        if self.chance(0.3):
            spec["disabled"] = self.chance(0.5) if self.chance(0.7) else self.value()
        if self.chance(0.3):
            kinds = ("frontend", "backend", "human")
            spec["type"] = rng.choice(kinds) if self.chance(0.7) else self.value()
        return spec

    # -- messages ------------------------------------------------------------------------

    def to_frame_message(self) -> dict[str, Any]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.55:
            return {
                "type": "tool-call",
                "id": self.call_id(),
                "toolName": self.tool_name(),
                "args": self.args(),
            }
        if roll < 0.8:
            return {"type": "tool-cancel", "id": self.call_id()}
        if roll < 0.85:
            return {"type": rng.choice(MESSAGE_TYPES[:3])}
        return {"type": self.string() if self.chance(0.7) else self.value(), "id": self.call_id()}

    def to_host_message(self) -> dict[str, Any]:
        rng = self.rng
        roll = rng.random()
        if roll < 0.45:
            message = {"type": "tool-result", "id": self.call_id()}
            if self.chance(0.6):
                message["result"] = self.value()
            if self.chance(0.4):
                message["error"] = self.string(20) if self.chance(0.5) else self.value()
            return message
        if roll < 0.85:
            kind = rng.choice(("model-context-update", "model-context-response"))
            return {"type": kind, "context": self.context()}
        return {"type": rng.choice(MESSAGE_TYPES), "id": self.call_id()}

    def message(self) -> Any:
        """The ``message`` of an envelope: mostly one of our types, often broken."""
        if self.chance(0.1):
            return self.value()
        if self.to_host == self.chance(0.8):  # mostly this direction's types, some the other's
            message = self.to_host_message()
        else:
            message = self.to_frame_message()
        for _ in range(self.rng.choice((0, 0, 1, 2))):
            roll = self.rng.random()
            key = self.rng.choice(list(message))
            if roll < 0.3:
                del message[key]
                if not message:
                    break
            elif roll < 0.7:
                message[key] = self.value()
            else:
                message[self.string(8)] = self.value()
        return message

    def envelope(self) -> Any:
        rng = self.rng
        roll = rng.random()
        if roll < 0.8:
            value: Any = {"channel": CHANNEL, "message": self.message()}
        elif roll < 0.9:
            value = {"channel": rng.choice(BAD_CHANNELS), "message": self.message()}
        elif roll < 0.95:  # a batch: not ours
            return [
                {"channel": CHANNEL, "message": self.message()} for _ in range(rng.randint(0, 3))
            ]
        else:
            return self.value()
        if self.chance(0.05):
            value[self.string(8)] = self.value()
        if self.chance(0.03):
            value.pop("channel", None)
        return value

    def near_miss(self, known_id: str) -> str:
        """JSON text that mentions a pending call's id yet is no valid result for it."""
        rng = self.rng
        result: dict[str, Any] = {"type": "tool-result", "id": known_id, "result": "garbage"}
        if self.chance(0.3):
            result["error"] = "garbage"
        kind = rng.randrange(10)
        value: Any
        if kind == 0:
            value = {"channel": rng.choice(BAD_CHANNELS), "message": result}
        elif kind == 1:
            value = {"message": result, "chanel": CHANNEL}
        elif kind == 2:
            value = envelope({**result, "type": rng.choice(NEAR_TYPES)})
        elif kind == 3:
            ids = ([known_id], {"id": known_id}, f"{known_id} ", f" {known_id}", None, 0)
            value = envelope(
                {**result, "id": rng.choice((*ids, f"{known_id}\x00", f"{known_id}-x"))}
            )
        elif kind == 4:
            key = rng.choice(("ID", "Id", "id ", "callId", "toolCallId"))
            value = envelope({"type": "tool-result", key: known_id, "result": "garbage"})
        elif kind == 5:
            value = envelope(json.dumps(result))
        elif kind == 6:
            value = rng.choice(([envelope(result)], envelope([result])))
        elif kind == 7:
            return json.dumps(json.dumps(envelope(result)))  # a JSON string holding the JSON
        elif kind == 8:
            text = json.dumps(envelope(result))
            return text[: rng.randrange(len(text))]  # truncated
        else:
            value = envelope({"type": "tool-call", "id": known_id, "toolName": "probe", "args": {}})
        return self.dumps(value)

    # -- texts, bytes and lines ----------------------------------------------------------

    def dumps(self, value: Any) -> str:
        """JSON text of ``value`` (NaN tokens and all); lone surrogates only as escapes."""
        text = json.dumps(value, ensure_ascii=self.chance(0.3))
        try:
            text.encode()
        except UnicodeEncodeError:
            text = json.dumps(value)
        return text

    def token(self) -> str:
        rng = self.rng
        roll = rng.random()
        if roll < 0.5:
            return rng.choice(TOKENS)
        if roll < 0.65:
            digits = "1" + "0" * rng.choice((20, 400, 4299, 4300, 5000))
            return rng.choice((digits, "-" + digits, "0." + digits[::-1], "1e" + "9" * 30))
        if roll < 0.85:
            depth = rng.choice((150, 199, 200, 201, 300, 1000, 5000))
            return rng.choice(("[" * depth + "]" * depth, '{"k":' * depth + "0" + "}" * depth))
        if roll < 0.98:
            return self.dumps(self.value())
        return '"' + "z" * rng.randint(10_000, 50_000) + '"'

    def raw_text(self) -> str:
        """Text JSON encoders never produce, always valid UTF-8."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.6:
            template = rng.choice(TO_HOST_TEMPLATES if self.to_host else TO_FRAME_TEMPLATES)
            parts = template.split("@")
            slots = [self.token() for _ in parts[1:]]
            return parts[0] + "".join(s + p for s, p in zip(slots, parts[1:], strict=True))
        valid = self.dumps(self.envelope())
        if roll < 0.75:
            return valid[: rng.randrange(len(valid))]  # truncated
        if roll < 0.85:
            return self.string(200, surrogates=False)  # prose
        return rng.choice(
            (
                "",
                " ",
                "\t\r ",
                "\ufeff" + valid,
                valid + " x",
                valid + valid,
                valid + "\n" + valid,
                "// " + valid,
                "/* */" + valid,
                "{'channel': 'assistant-ui-frame'}",
                '{"channel":"x","message":{"type":"model-context-request"},"channel":"'
                + CHANNEL
                + '"}',
            )
        )

    def text(self) -> str:
        """A text frame or line: mostly JSON of an envelope, else raw text."""
        return self.dumps(self.envelope()) if self.chance(0.7) else self.raw_text()

    def junk_bytes(self) -> bytes:
        """Bytes that are not UTF-8 (or, now and then, by chance are)."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.4:
            return rng.randbytes(rng.randint(0, 200))
        bad = rng.choice(INVALID_UTF8)
        if roll < 0.8:
            data = self.dumps(self.envelope()).encode()
            cut = rng.randint(0, len(data))
            return data[:cut] + bad + data[cut:]
        return self.string(50, surrogates=False).encode() + bad

    def line(self) -> bytes:
        """One newline-terminated line for a stdio peer: text, junk or overlong."""
        rng = self.rng
        roll = rng.random()
        if roll < 0.8:
            data = self.text().encode()
        elif roll < 0.95:
            data = self.junk_bytes()
        elif roll < 0.999:
            data = rng.choice((b"", b" ", b"\r", b"\x00", b"\x1b[2J", b"\xef\xbb\xbf"))
        else:
            data = b"o" * rng.randint(MAX_LINE + 1, 3 * MAX_LINE)
        return data.replace(b"\n", b"\\n") + (b"\r\n" if self.chance(0.05) else b"\n")

    def split(self, data: bytes) -> list[bytes]:
        """``data`` cut at random byte offsets (inside UTF-8 sequences too)."""
        cuts = sorted(self.rng.choices(range(len(data) + 1), k=self.rng.randint(1, 5)))
        return [data[i:j] for i, j in zip([0, *cuts], [*cuts, len(data)], strict=True)]


# -- raw WebSocket peers -----------------------------------------------------------------------


class RawPeer:
    """One end of a WebSocket connection driven by hand: websockets' sans-I/O protocol.

    ``read()`` (run it in a task) keeps what the library sends: ``messages`` (the frame
    messages), ``results`` (tool-results by id) and ``problems`` (anything that is not one
    text frame of UTF-8 JSON on our channel).
    """

    def __init__(self, stream: anyio.abc.ByteStream, protocol: Protocol) -> None:
        self.stream = stream
        self.protocol = protocol
        self.lock = anyio.Lock()
        self.messages: list[dict[str, Any]] = []
        self.results: dict[str, dict[str, Any]] = {}
        self.problems: list[str] = []
        self.closed = anyio.Event()
        self._changed = anyio.Event()
        self._seen = 0

    # -- sending -------------------------------------------------------------------------

    async def send_frame(self, opcode: Opcode, data: bytes) -> None:
        await self.send_fragments(opcode, [data])

    async def send_fragments(
        self, opcode: Opcode, parts: Sequence[bytes], *, pings: bool = False
    ) -> None:
        """One message in ``parts`` (``opcode``, then continuations), pings in between."""
        async with self.lock:
            for index, part in enumerate(parts):
                last = index == len(parts) - 1
                self.protocol.send_frame(Frame(opcode if index == 0 else Opcode.CONT, part, last))
                if pings and not last:
                    self.protocol.send_frame(Frame(Opcode.PING, b"between fragments"))
            await self._flush()

    async def send_json(self, value: Any) -> None:
        await self.send_frame(Opcode.TEXT, json.dumps(value).encode())

    async def _flush(self) -> None:
        """Write what the protocol has queued; the caller holds the lock."""
        try:
            for data in self.protocol.data_to_send():
                if data:
                    await self.stream.send(data)
                else:
                    await self.stream.send_eof()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise AssertionError(f"the connection broke ({self.close_text()}): {exc!r}") from exc

    # -- receiving -----------------------------------------------------------------------

    async def read(self) -> None:
        """Read until the connection ends, answering pings."""
        try:
            while True:
                try:
                    data = await self.stream.receive()
                except (
                    anyio.EndOfStream,
                    anyio.BrokenResourceError,
                    anyio.ClosedResourceError,
                    OSError,
                ):
                    self.protocol.receive_eof()
                    return
                self.protocol.receive_data(data)
                for event in self.protocol.events_received():
                    if isinstance(event, Frame):
                        self.on_frame(event)
                self._notify()
                # Pongs and close replies. Never wait for the lock: a sender blocked on a
                # full socket holds it, and would then wait for us forever.
                try:
                    self.lock.acquire_nowait()
                except anyio.WouldBlock:
                    continue  # the sender flushes them with its next message
                try:
                    await self._flush()
                except AssertionError:
                    return
                finally:
                    self.lock.release()
        finally:
            self.closed.set()
            self._notify()

    def on_frame(self, frame: Frame) -> None:
        if frame.opcode in (Opcode.PING, Opcode.PONG, Opcode.CLOSE):
            return
        if frame.opcode is not Opcode.TEXT or not frame.fin:
            self.problems.append(f"a {frame.opcode.name} frame (fin={frame.fin})")
            return
        try:
            raw = json.loads(frame.data.decode(), parse_int=parse_int)
        except ValueError as exc:  # UnicodeDecodeError too
            self.problems.append(f"not UTF-8 JSON ({exc}): {bytes(frame.data[:80])!r}")
            return
        ours = isinstance(raw, dict) and raw.get("channel") == CHANNEL
        message = raw.get("message") if ours else None
        if not isinstance(message, dict):
            self.problems.append(f"not a frame message: {raw!r:.100}")
            return
        if not isinstance(message.get("type"), str):
            self.problems.append(f"a message without a type: {raw!r:.100}")
            return
        if not isinstance(message.pop("documentId", ""), str):  # frames send one
            self.problems.append(f"a documentId that is not a string: {raw!r:.100}")
            return
        self.messages.append(message)
        if message["type"] == "tool-result" and isinstance(message.get("id"), str):
            self.results[message["id"]] = message

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, predicate: Callable[[], bool], what: str) -> None:
        """Wait until ``predicate()`` holds; fail clearly if the connection ends first."""
        with anyio.move_on_after(WAIT):
            while not predicate():
                if self.closed.is_set():
                    raise AssertionError(f"the connection ended before {what}: {self.close_text()}")
                await self._changed.wait()
            return
        raise AssertionError(f"no {what} within {WAIT} s")

    async def next_message(self, kind: str) -> dict[str, Any]:
        """The next message of type ``kind`` not returned before."""

        def find() -> int | None:
            for index in range(self._seen, len(self.messages)):
                if self.messages[index]["type"] == kind:
                    return index
            return None

        await self.wait_for(lambda: find() is not None, f"{kind} message")
        index = find()
        assert index is not None
        self._seen = index + 1
        return self.messages[index]

    async def result(self, call_id: str) -> dict[str, Any]:
        await self.wait_for(lambda: call_id in self.results, f"tool-result for {call_id!r}")
        return self.results[call_id]

    def close_code(self) -> int | None:
        close = self.protocol.close_rcvd
        return None if close is None else close.code

    def close_text(self) -> str:
        close = self.protocol.close_rcvd
        return "no close frame" if close is None else f"close code {close.code} {close.reason!r}"


def parse_int(digits: str) -> int | float:
    """JSON integers of any length (Python's ``int()`` refuses more than 4,300 digits)."""
    return int(digits) if len(digits) < 4000 else float(digits)


async def send_hostile(peer: RawPeer, garbage: Garbage) -> None:
    """One hostile message: a text, binary or fragmented message, or a control frame.

    Text is always valid UTF-8 here: invalid UTF-8 text closes a connection (code 1007).
    """
    rng = garbage.rng
    roll = rng.random()
    if roll < 0.6:
        await peer.send_frame(Opcode.TEXT, garbage.text().encode())
    elif roll < 0.7:
        data = garbage.junk_bytes() if garbage.chance(0.7) else garbage.text().encode()
        await peer.send_frame(Opcode.BINARY, data)
    elif roll < 0.9:
        opcode = Opcode.TEXT if garbage.chance(0.8) else Opcode.BINARY
        data = garbage.text().encode() if opcode is Opcode.TEXT else garbage.junk_bytes()
        await peer.send_fragments(opcode, garbage.split(data), pings=garbage.chance(0.3))
    elif roll < 0.96:
        await peer.send_frame(Opcode.PING, rng.randbytes(rng.randint(0, 125)))
    else:
        await peer.send_frame(Opcode.PONG, rng.randbytes(rng.randint(0, 125)))


@asynccontextmanager
async def raw_client(url: str) -> AsyncIterator[RawPeer]:
    """A raw client connection to ``url``, reading in the background."""
    uri = parse_uri(url)
    protocol = ClientProtocol(uri, max_size=None)
    async with await anyio.connect_tcp(uri.host, uri.port) as stream:
        protocol.send_request(protocol.connect())
        for data in protocol.data_to_send():
            await stream.send(data)
        events: list[object] = []
        while not events:
            protocol.receive_data(await stream.receive())
            events = protocol.events_received()
        response = events[0]
        assert isinstance(response, Response)
        assert response.status_code == 101, response
        peer = RawPeer(stream, protocol)
        for event in events[1:]:
            if isinstance(event, Frame):
                peer.on_frame(event)
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer.read)
            yield peer
            tg.cancel_scope.cancel()


class RawServer:
    """Accepts one connection and plays the server side of it by hand."""

    def __init__(self, listener: anyio.abc.SocketListener) -> None:
        self.listener = listener
        self.url = f"ws://127.0.0.1:{listener.extra(SocketAttribute.local_port)}"
        self._ready = anyio.Event()
        self._peer: RawPeer | None = None

    async def run(self) -> None:
        async with await self.listener.accept() as stream:
            protocol = ServerProtocol(max_size=None)
            events: list[object] = []
            while not events:
                protocol.receive_data(await stream.receive())
                events = protocol.events_received()
            request = events[0]
            assert isinstance(request, Request)
            protocol.send_response(protocol.accept(request))
            for data in protocol.data_to_send():
                await stream.send(data)
            self._peer = RawPeer(stream, protocol)
            for event in events[1:]:
                if isinstance(event, Frame):
                    self._peer.on_frame(event)
            self._ready.set()
            await self._peer.read()

    async def peer(self) -> RawPeer:
        with anyio.fail_after(WAIT):
            await self._ready.wait()
        assert self._peer is not None
        return self._peer


@asynccontextmanager
async def raw_server() -> AsyncIterator[RawServer]:
    """A raw WebSocket server on 127.0.0.1 for one client."""
    async with (
        await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0) as listener,
        anyio.create_task_group() as tg,
    ):
        server = RawServer(listener.listeners[0])
        tg.start_soon(server.run)
        yield server
        tg.cancel_scope.cancel()


# -- frames under fuzz -------------------------------------------------------------------------


def fuzz_registry() -> ModelContextRegistry:
    """``add``, ``echo`` and ``slow`` (async), ``upper`` (sync: runs in a thread)."""
    registry = ModelContextRegistry()
    registry.add_instruction(SYSTEM)

    @registry.tool
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @registry.tool
    async def echo(text: str) -> str:
        """Return the text."""
        return text

    @registry.tool
    async def slow(ms: int = 1) -> int:
        """Sleep up to 20 ms, then return ``ms``."""
        await anyio.sleep(min(max(ms, 0), 20) / 1000)
        return ms

    @registry.tool
    def upper(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    return registry


WORKER = r'''
"""A fuzzed stdio worker: python worker.py BACKEND MAX_MESSAGE_BYTES [GARBAGE_FILE].

With GARBAGE_FILE, its bytes (and a last line without a newline) go to fd 1 before
serve_stdio claims stdout.
"""
import functools
import os
import sys

import anyio

from assistant_frames import ModelContextRegistry
from assistant_frames.frames import serve_stdio

backend, max_line = sys.argv[1], int(sys.argv[2])
if len(sys.argv) > 3:
    with open(sys.argv[3], "rb") as file:
        view = memoryview(file.read() + b"a last garbage line with no newline")
    while view:
        view = view[os.write(1, view):]

registry = ModelContextRegistry()
registry.add_instruction(SYSTEM)


@registry.tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@registry.tool
async def echo(text: str) -> str:
    """Return the text."""
    return text


@registry.tool
async def slow(ms: int = 1) -> int:
    """Sleep up to 20 ms, then return ms."""
    await anyio.sleep(min(max(ms, 0), 20) / 1000)
    return ms


@registry.tool
def upper(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


@registry.tool
def pid() -> int:
    """The worker's process id."""
    return os.getpid()


anyio.run(functools.partial(serve_stdio, registry, max_message_bytes=max_line), backend=backend)
'''.replace("SYSTEM", repr(SYSTEM))

RAW_FRAME = r'''
"""A hostile frame written by hand: python raw_frame.py BEFORE DURING NEAR CONTEXT.

Writes the bytes of BEFORE to fd 1, then a model-context-update with CONTEXT (JSON).
Answers each tool-call with the bytes of DURING, then those of NEAR with the call's id
put in, then a valid result. Exits when its stdin ends.
"""
import json
import os
import sys

CHANNEL = "assistant-ui-frame"


def write(data):
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]


def send(message):
    write(json.dumps({"channel": CHANNEL, "message": message}).encode() + b"\n")


files = []
for path in sys.argv[1:4]:
    with open(path, "rb") as file:
        files.append(file.read())
before, during, near = files
write(before)
send({"type": "model-context-update", "context": json.loads(sys.argv[4])})
for line in sys.stdin.buffer:
    try:
        message = json.loads(line)["message"]
    except (ValueError, KeyError, TypeError):
        continue
    if message.get("type") != "tool-call":
        continue
    call_id = message["id"]
    write(during)
    write(near.replace(MARK, call_id.encode()))
    result = {"tool": message["toolName"], "args": message["args"]}
    send({"type": "tool-result", "id": call_id, "result": result})
'''.replace("MARK", repr(ID_MARK.encode()))


@pytest.fixture
def fuzz_worker(tmp_path: Path, anyio_backend: str) -> Callable[..., list[str]]:
    """``fuzz_worker(garbage=None)``: the command line of a real worker on the test's backend."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER, encoding="utf-8")

    def command(garbage: Path | None = None) -> list[str]:
        extra = [] if garbage is None else [str(garbage)]
        return [sys.executable, str(script), anyio_backend, str(MAX_LINE), *extra]

    return command


@pytest.fixture
def hostile_lines(tmp_path: Path) -> dict[str, Path]:
    """Garbage for a hostile stdio frame, written ahead of time.

    ``before``: MESSAGES lines; ``during``: 1,000 more; ``near``: 300 near misses of a
    pending call's result, its id written as ``ID_MARK``.
    """
    garbage = Garbage(SEED + 5, to_host=True)
    files = {
        "before": b"".join(garbage.line() for _ in range(MESSAGES)),
        "during": b"".join(garbage.line() for _ in range(1_000)),
        "near": b"".join(garbage.near_miss(ID_MARK).encode() + b"\n" for _ in range(300)),
    }
    paths = {}
    for name, data in files.items():
        paths[name] = tmp_path / f"{name}.bin"
        paths[name].write_bytes(data)
    return paths


def tool_result(call_id: str, result: Any) -> dict[str, Any]:
    return {"type": "tool-result", "id": call_id, "result": result}


def assert_well_formed(results: dict[str, dict[str, Any]]) -> None:
    """Each tool-result carries a string ``error`` or a ``result``, never both."""
    for message in results.values():
        assert ("result" in message) != isinstance(message.get("error"), str), message


# -- frame side over WebSocket -----------------------------------------------------------------


async def test_websocket_frame_serves_after_10k_hostile_messages_on_the_same_connection() -> None:
    """A frame served by websocket_server() survives 10k hostile messages from a raw client:
    valid calls riding along (some fragmented inside UTF-8 sequences) all get their exact
    results, the same connection then still answers requests and calls, and the server
    still accepts new hosts."""
    frame = AssistantFrameProvider(fuzz_registry())
    garbage = Garbage(SEED)
    expected_update = {
        "type": "model-context-update",
        "context": serialize_context(frame.get_model_context()),
    }
    checks: dict[str, Any] = {}
    with anyio.fail_after(LIMIT):
        async with websocket_server(frame.serve) as server, raw_client(server.url) as client:
            for i in range(MESSAGES):
                if i % CHECK_EVERY == 0:
                    call_id = f"check-{i}"
                    if i % (2 * CHECK_EVERY):
                        checks[call_id] = f"{UNICODE_TEXT} {i}"
                        call = {"type": "tool-call", "id": call_id, "toolName": "echo"}
                        call["args"] = {"text": checks[call_id]}
                        data = json.dumps(envelope(call), ensure_ascii=False).encode()
                        await client.send_fragments(Opcode.TEXT, garbage.split(data), pings=True)
                    else:
                        checks[call_id] = i + 1000
                        call = {"type": "tool-call", "id": call_id, "toolName": "add"}
                        await client.send_json(envelope({**call, "args": {"a": i, "b": 1000}}))
                await send_hostile(client, garbage)
            assert not client.closed.is_set(), f"the server hung up: {client.close_text()}"

            # The same connection still serves...
            await client.send_json(envelope({"type": "model-context-request"}))
            probe = "probe-same-connection"
            await client.send_json(
                envelope(
                    {"type": "tool-call", "id": probe, "toolName": "add", "args": {"a": 2, "b": 40}}
                )
            )
            assert await client.result(probe) == tool_result(probe, 42)
            for call_id, expected in checks.items():
                assert await client.result(call_id) == tool_result(call_id, expected)
            updates = [m for m in client.messages if m["type"] == "model-context-update"]
            assert updates, "no model-context-update at all"
            assert all(update == expected_update for update in updates)
            assert {m["type"] for m in client.messages} <= {"tool-result", "model-context-update"}
            assert_well_formed(client.results)
            assert client.problems == []
            assert frame.connection_count == 1

            # ...and so does the server, to a new host.
            async with (
                connect_websocket(server.url) as transport,
                AssistantFrameHost(transport, timeout=CALL_TIMEOUT) as host,
            ):
                context = await host.wait_for_context(timeout=WAIT)
                assert context.system == SYSTEM
                assert set(context.tools) == set(TOOLS)
                assert await host.call_tool("add", {"a": 1, "b": 2}) == 3
                assert await host.call_tool("echo", {"text": UNICODE_TEXT}) == UNICODE_TEXT
                assert await host.call_tool("upper", {"text": "abc"}) == "ABC"
                assert frame.connection_count == 2
            probe = "probe-after-the-new-host"
            await client.send_json(
                envelope(
                    {"type": "tool-call", "id": probe, "toolName": "echo", "args": {"text": "ok"}}
                )
            )
            assert await client.result(probe) == tool_result(probe, "ok")


INVALID_TEXT = {
    "bad-bytes": [b"\xff\xfe not utf-8"],
    "overlong-in-a-call": [
        b'{"channel":"assistant-ui-frame","message":{"type":"tool-call","id":"u",'
        b'"toolName":"echo","args":{"text":"\xc0\xaf"}}}'
    ],
    "encoded-surrogate": [b'["\xed\xa0\x80"]'],
    "beyond-u10ffff": [b'"\xf4\x90\x80\x80"'],
    "truncated-sequence": [b'"\xe2\x82"'],
    "truncated-across-fragments": [b'["\xe2', b"\x82", b'"]'],
}


@pytest.mark.parametrize("fragments", list(INVALID_TEXT.values()), ids=list(INVALID_TEXT))
async def test_websocket_frame_closes_1007_on_invalid_utf8_text(fragments: list[bytes]) -> None:
    """A text message that is not UTF-8 fails that connection with close code 1007 (RFC 6455
    section 8.1); the server keeps serving the other connection and new ones."""
    frame = AssistantFrameProvider(fuzz_registry())
    with anyio.fail_after(LIMIT):
        async with (
            websocket_server(frame.serve) as server,
            connect_websocket(server.url) as transport,
            AssistantFrameHost(transport, timeout=CALL_TIMEOUT) as other,
        ):
            await other.wait_for_context(timeout=WAIT)
            async with raw_client(server.url) as client:
                await client.send_json(
                    envelope(
                        {
                            "type": "tool-call",
                            "id": "c1",
                            "toolName": "add",
                            "args": {"a": 1, "b": 2},
                        }
                    )
                )
                assert await client.result("c1") == tool_result("c1", 3)
                await client.send_fragments(Opcode.TEXT, fragments)
                with anyio.move_on_after(CLOSE_WAIT):
                    await client.closed.wait()
                assert client.closed.is_set(), (
                    f"still open {CLOSE_WAIT} s after a text message of invalid UTF-8"
                )
                assert client.close_code() == 1007, client.close_text()
                assert "u" not in client.results  # the call in invalid UTF-8 was not run
            await wait_until(lambda: frame.connection_count == 1)
            assert await other.call_tool("add", {"a": 2, "b": 3}) == 5
            async with (
                connect_websocket(server.url) as fresh_transport,
                AssistantFrameHost(fresh_transport, timeout=CALL_TIMEOUT) as fresh,
            ):
                await fresh.wait_for_context(timeout=WAIT)
                assert await fresh.call_tool("echo", {"text": UNICODE_TEXT}) == UNICODE_TEXT


# -- host side over WebSocket ------------------------------------------------------------------

FIRST_CONTEXT = {"system": "First.", "tools": {"probe": {"parameters": EMPTY_OBJECT}}}
FINAL_SYSTEM = "The final context, which no garbage can equal by chance."
FINAL_CONTEXT = {
    "system": FINAL_SYSTEM,
    "tools": {
        "probe": {"description": "Probe again.", "parameters": EMPTY_OBJECT},
        "fresh": {
            "description": "A tool that came after the garbage.",
            "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "type": "frontend",
        },
    },
}


async def test_websocket_host_survives_10k_hostile_messages() -> None:
    """A host on connect_websocket() survives 10k hostile messages from a raw frame, near
    misses of its two pending calls' results among them: neither call resolves early, a
    valid context afterwards replaces the garbage, and both calls then get their exact
    result and error, as does a new call."""
    garbage = Garbage(SEED + 1, to_host=True)
    with anyio.fail_after(LIMIT):
        async with (
            raw_server() as server,
            connect_websocket(server.url) as transport,
            AssistantFrameHost(transport, timeout=CALL_TIMEOUT, name="hostile") as host,
            anyio.create_task_group() as tg,
        ):
            peer = await server.peer()
            await peer.next_message("model-context-request")
            await peer.send_json(
                envelope({"type": "model-context-update", "context": FIRST_CONTEXT})
            )
            assert (await host.wait_for_context(timeout=WAIT)).system == "First."

            finished = Outcome()  # a call that ends before the flood: later results are stale
            tg.start_soon(finished.run, host, "probe", {"n": 0})
            finished_id = (await peer.next_message("tool-call"))["id"]
            await peer.send_json(envelope(tool_result(finished_id, "done")))
            await finished.done.wait()
            assert finished.result == "done"

            succeeds, fails = Outcome(), Outcome()
            tg.start_soon(succeeds.run, host, "probe", {"n": 1})
            tg.start_soon(fails.run, host, "probe", {"n": 2})
            pending: dict[int, str] = {}
            for _ in range(2):
                call = await peer.next_message("tool-call")
                pending[call["args"]["n"]] = call["id"]
            assert sorted(pending) == [1, 2]

            for _ in range(MESSAGES):
                roll = garbage.rng.random()
                if roll < 0.08:
                    text = garbage.near_miss(garbage.rng.choice(list(pending.values())))
                    if garbage.chance(0.2):
                        parts = garbage.split(text.encode())
                        await peer.send_fragments(Opcode.TEXT, parts, pings=True)
                    else:
                        await peer.send_frame(Opcode.TEXT, text.encode())
                elif roll < 0.1:
                    stale = tool_result(finished_id, garbage.value())
                    await peer.send_frame(Opcode.TEXT, garbage.dumps(envelope(stale)).encode())
                else:
                    await send_hostile(peer, garbage)
            assert not peer.closed.is_set(), f"the host hung up: {peer.close_text()}"

            await peer.send_json(
                envelope({"type": "model-context-update", "context": FINAL_CONTEXT})
            )
            await wait_until(
                lambda: host.get_model_context().system == FINAL_SYSTEM or not host.connected,
                timeout=WAIT,
            )
            assert host.state == "connected"
            context = host.get_model_context()
            assert set(context.tools) == {"probe", "fresh"}
            assert context.tools["probe"].description == "Probe again."
            fresh_spec = FINAL_CONTEXT["tools"]["fresh"]  # type: ignore[index]
            assert context.tools["fresh"].description == fresh_spec["description"]
            assert context.tools["fresh"].parameters == fresh_spec["parameters"]
            assert context.tools["fresh"].type == "frontend"

            assert not succeeds.done.is_set(), (succeeds.result, succeeds.error)
            assert not fails.done.is_set(), (fails.result, fails.error)
            await peer.send_json(envelope(tool_result(pending[1], {"ok": [1, "two", None, 3.5]})))
            await peer.send_json(
                envelope({"type": "tool-result", "id": pending[2], "error": "it failed"})
            )
            with anyio.fail_after(WAIT):
                await succeeds.done.wait()
                await fails.done.wait()
            assert succeeds.error is None
            assert succeeds.result == {"ok": [1, "two", None, 3.5]}
            assert isinstance(fails.error, ToolCallError)
            assert fails.error.message == "it failed"

            fresh = Outcome()
            tg.start_soon(fresh.run, context, "fresh", {"n": 7})  # as a parent would call it
            call = await peer.next_message("tool-call")
            assert (call["toolName"], call["args"]) == ("fresh", {"n": 7})
            await peer.send_json(envelope(tool_result(call["id"], [UNICODE_TEXT])))
            with anyio.fail_after(WAIT):
                await fresh.done.wait()
            assert fresh.error is None
            assert fresh.result == [UNICODE_TEXT]
            assert host.connected
            assert peer.problems == []
            host_types = {"model-context-request", "model-context-subscribe", "tool-call"}
            assert {m["type"] for m in peer.messages} <= host_types


async def test_websocket_host_fails_the_connection_1007_on_invalid_utf8_text() -> None:
    """A text message of invalid UTF-8 from the frame fails the host's connection with code
    1007 (RFC 6455 section 8.1): the pending call fails at once, it does not resolve."""
    with anyio.fail_after(LIMIT):
        async with (
            raw_server() as server,
            connect_websocket(server.url) as transport,
            AssistantFrameHost(transport, timeout=CALL_TIMEOUT) as host,
            anyio.create_task_group() as tg,
        ):
            peer = await server.peer()
            await peer.next_message("model-context-request")
            await peer.send_json(
                envelope({"type": "model-context-update", "context": FIRST_CONTEXT})
            )
            await host.wait_for_context(timeout=WAIT)
            pending = Outcome()
            tg.start_soon(pending.run, host, "probe", {})
            call_id = (await peer.next_message("tool-call"))["id"].encode()
            await peer.send_frame(
                Opcode.TEXT,
                b'{"channel":"assistant-ui-frame","message":{"type":"tool-result","id":"'
                + call_id
                + b'","result":"\xff\xfe"}}',
            )
            with anyio.move_on_after(CLOSE_WAIT):
                await host.wait_disconnected()
            assert host.state == "disconnected", (host.state, pending.result)
            with anyio.fail_after(WAIT):
                await pending.done.wait()
            assert isinstance(pending.error, FrameDisconnected), (pending.result, pending.error)
            # Wait for the close frame, not for the TCP connection to end: the host closes
            # the socket only when it leaves, so waiting for that waited out CLOSE_WAIT.
            with anyio.move_on_after(CLOSE_WAIT):
                await peer.wait_for(
                    lambda: peer.protocol.close_rcvd is not None or peer.closed.is_set(),
                    "a close frame",
                )
            assert peer.close_code() == 1007, peer.close_text()


# -- frame side over stdio ---------------------------------------------------------------------


async def test_stdio_worker_serves_after_10k_hostile_values_and_10k_raw_lines(
    fuzz_worker: Callable[..., list[str]],
) -> None:
    """A serve_stdio() worker gets 10k hostile JSON values through the transport's send and
    10k raw lines on its stdin (not JSON, not UTF-8, overlong, split over writes), with
    valid calls in between: every call gets its exact result, the worker stays alive, and
    it exits cleanly when its stdin closes."""
    values = Garbage(SEED + 2, surrogates=False)  # transport.send needs a JSON form
    lines = Garbage(SEED + 3)
    with anyio.fail_after(LIMIT):
        async with (
            spawn_worker(fuzz_worker(), stderr="capture") as transport,
            AssistantFrameHost(transport, timeout=CALL_TIMEOUT, name="worker") as host,
        ):
            context = await host.wait_for_context(timeout=WAIT)
            assert context.system == SYSTEM
            assert set(context.tools) == {*TOOLS, "pid"}
            # One round trip: the host has sent its subscribe and sends nothing by itself now.
            assert await host.call_tool("add", {"a": 1, "b": 2}) == 3
            # The worker's stdin: process.stdin, or under trio the transport's own pipe.
            stdin = transport.process.stdin or transport._send_stream
            for block in range(MESSAGES // 1000):
                for _ in range(1000):
                    await transport.send(values.envelope())
                # A round trip: the transport's writer has written everything queued, so
                # the raw writes below cannot interleave with its lines (it owns stdin).
                i = block * 1000 + 999
                assert await host.call_tool("add", {"a": i, "b": 1}) == i + 1
                for _ in range(10):
                    await stdin.send(b"".join(lines.line() for _ in range(100)))
                if block == MESSAGES // 2000:  # lines split over writes, one of them overlong
                    call = b'{"channel":"assistant-ui-frame","message":{"type":"tool-call",'
                    call += b'"id":"split","toolName":"echo","args":{"text":"'
                    text = UNICODE_TEXT.encode()
                    await stdin.send(call + text[:5])
                    await stdin.send(text[5:] + b'"}}}\n')
                    await stdin.send(call + b"s" * MAX_LINE)
                    await stdin.send(b"s" * MAX_LINE + b'"}}}\n')
            assert transport.returncode is None, transport.stderr_tail()
            assert await host.call_tool("add", {"a": 20, "b": 22}) == 42
            assert await host.call_tool("echo", {"text": UNICODE_TEXT}) == UNICODE_TEXT
            assert await host.call_tool("upper", {"text": "abc"}) == "ABC"
            assert await host.call_tool("pid", {}) == transport.pid
            assert host.connected
            assert host.get_model_context().system == SYSTEM
        assert transport.returncode == 0, transport.stderr_tail()
        assert "Traceback" not in transport.stderr_tail()


# -- host side over stdio ----------------------------------------------------------------------


async def test_stdio_host_survives_a_hostile_frame_writing_10k_garbage_lines(
    tmp_path: Path, hostile_lines: dict[str, Path]
) -> None:
    """A host on a hand-written worker that writes 10k garbage lines to its stdout before
    its context, and 1,300 more (near misses of the call's result among them) before each
    result: the host ends up with the valid context and every call returns exactly."""
    script = tmp_path / "raw_frame.py"
    script.write_text(RAW_FRAME, encoding="utf-8")
    files = [str(hostile_lines[name]) for name in ("before", "during", "near")]
    command = [sys.executable, str(script), *files, json.dumps(FINAL_CONTEXT)]
    with anyio.fail_after(LIMIT):
        async with (
            spawn_worker(command, stderr="capture", max_message_bytes=MAX_LINE) as transport,
            AssistantFrameHost(transport, timeout=CALL_TIMEOUT, name="hostile") as host,
        ):
            await wait_until(
                lambda: host.get_model_context().system == FINAL_SYSTEM or not host.connected,
                timeout=WAIT,
            )
            assert host.state == "connected", transport.stderr_tail()
            context = host.get_model_context()
            assert set(context.tools) == {"probe", "fresh"}
            assert context.tools["probe"].description == "Probe again."
            assert context.tools["fresh"].type == "frontend"
            for n in range(3):
                result = await host.call_tool("probe", {"n": n, "text": UNICODE_TEXT})
                assert result == {"tool": "probe", "args": {"n": n, "text": UNICODE_TEXT}}
            assert host.connected
            assert transport.returncode is None
        assert transport.returncode == 0, transport.stderr_tail()


async def test_stdio_host_gets_the_real_context_after_10k_garbage_lines_before_serve_stdio(
    fuzz_worker: Callable[..., list[str]], hostile_lines: dict[str, Path]
) -> None:
    """A real worker whose start-up writes 10k garbage lines straight to fd 1 (and a last
    one without a newline) before serve_stdio() claims stdout: the host ends up with the
    worker's context and calls work."""
    with anyio.fail_after(LIMIT):
        async with (
            spawn_worker(
                fuzz_worker(hostile_lines["before"]), stderr="capture", max_message_bytes=MAX_LINE
            ) as transport,
            AssistantFrameHost(transport, timeout=CALL_TIMEOUT, name="worker") as host,
        ):
            await wait_until(
                lambda: host.get_model_context().system == SYSTEM or not host.connected,
                timeout=WAIT,
            )
            assert host.state == "connected", transport.stderr_tail()
            assert set(host.get_model_context().tools) == {*TOOLS, "pid"}
            assert await host.call_tool("add", {"a": 20, "b": 22}) == 42
            assert await host.call_tool("echo", {"text": UNICODE_TEXT}) == UNICODE_TEXT
            assert await host.call_tool("pid", {}) == transport.pid
        assert transport.returncode == 0, transport.stderr_tail()
