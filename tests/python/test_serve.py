"""`nxrt serve` (tools/nxrt_cli/cmd_serve.cc): a real server process on loopback with
SmolLM2-135M-Instruct (int4, converted from the zoo's GGUF), driven by the official
`openai` client and by raw HTTP: models, completions and chat completions, streamed and
not, stop strings, seeds, usage, API keys, bad requests with OpenAI-style errors, a busy
queue, client disconnects, metrics and shutdown on SIGTERM."""

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from nxrt.genai.convert import convert_gguf

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import zoo  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
NXRT = os.path.join(os.environ.get("NXRT_BUILD_DIR", os.path.join(ROOT, "build")), "tools",
                    "nxrt")
KEY = "test-key-123"
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Server:
    def __init__(self, folder, *args):
        self.port = _free_port()
        self.proc = subprocess.Popen(
            [NXRT, "serve", folder, "--port", str(self.port), "--model-name", "smollm2",
             *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"nxrt serve exited: {self.proc.stderr.read().decode()}")
            try:
                if self.request("GET", "/health")[0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("nxrt serve did not come up within 60 s")

    def request(self, method, path, body=None, headers=None, timeout=120):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        conn.request(method, path, body=data, headers=headers or {})
        res = conn.getresponse()
        text = res.read()
        conn.close()
        return res.status, text

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                raise


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    if not os.path.exists(NXRT):
        pytest.skip(f"{NXRT} is not built (scripts/build.sh builds it)")
    entry = zoo.get_entry("smollm2_135m_int4")
    try:
        gguf = zoo._fetcher().fetch_source(entry, zoo.cache_dir())
    except zoo.fetch_errors() as err:
        pytest.skip(f"the SmolLM2 GGUF file could not be fetched: {zoo.first_line(err)}")
    return convert_gguf(gguf, str(tmp_path_factory.mktemp("serve") / "smollm2"), weights="int4")


@pytest.fixture(scope="module")
def server(folder):
    s = _Server(folder, "--api-key", KEY)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def client(server):
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key=KEY,
                         max_retries=0)


def test_models(client):
    models = client.models.list()
    assert [m.id for m in models.data] == ["smollm2"]


def test_chat_completion_renders_the_models_template(client, folder):
    """The chat route renders SmolLM2's own template (its default system prompt
    included) as the Python engine does: the same greedy reply as a completion of that
    rendering."""
    from nxrt.genai.engine import Engine

    r = client.chat.completions.create(model="smollm2", messages=QUESTION, temperature=0,
                                       max_tokens=32)
    assert r.object == "chat.completion"
    assert r.choices[0].message.role == "assistant"
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    prompt = Engine.from_dir(folder).apply_chat_template(QUESTION)
    assert "You are a helpful AI assistant" in prompt
    twin = client.completions.create(model="smollm2", prompt=prompt, temperature=0,
                                     max_tokens=32)
    assert r.choices[0].message.content == twin.choices[0].text
    assert r.choices[0].finish_reason == twin.choices[0].finish_reason
    assert r.usage.prompt_tokens == twin.usage.prompt_tokens
    assert r.choices[0].message.content


def test_next_chat_turn_runs_only_its_new_tokens(client, folder):
    """A finished sequence's keys and values stay in its cache slot: the next turn of the
    conversation goes to that slot and runs only the tokens after the shared prefix
    (usage.prompt_tokens_details.cached_tokens), answering as a fresh server does, on the
    batched and on the serial path."""
    openai = pytest.importorskip("openai")
    first = client.chat.completions.create(model="smollm2", messages=QUESTION, temperature=0,
                                           max_tokens=16)
    turn2 = QUESTION + [{"role": "assistant", "content": first.choices[0].message.content},
                        {"role": "user", "content": "And the capital of Italy?"}]
    second = client.chat.completions.create(model="smollm2", messages=turn2, temperature=0,
                                            max_tokens=16)
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert first.usage.prompt_tokens <= cached < second.usage.prompt_tokens
    for args in ((), ("--batch", "1")):
        fresh = _Server(folder, *args)
        try:
            c = openai.OpenAI(base_url=f"http://127.0.0.1:{fresh.port}/v1", api_key="none",
                              max_retries=0)
            alone = c.chat.completions.create(model="smollm2", messages=turn2, temperature=0,
                                              max_tokens=16)
            assert alone.usage.prompt_tokens_details.cached_tokens == 0, args
            assert alone.choices[0].message.content == second.choices[0].message.content, args
            again = c.chat.completions.create(model="smollm2", messages=turn2, temperature=0,
                                              max_tokens=16)
            # The same prompt again: all but its last 5 tokens come from the cache (they run
            # again, with the kernels a full prefill gives them: Engine::kRerunTokens).
            assert again.usage.prompt_tokens_details.cached_tokens == alone.usage.prompt_tokens - 5
            assert again.choices[0].message.content == alone.choices[0].message.content, args
            status, text = fresh.request("GET", "/metrics")
            assert f"nxrt_cached_prompt_tokens_total {alone.usage.prompt_tokens - 5}" in text.decode()
        finally:
            fresh.stop()


def test_completion_matches_nxrt_generate(client, folder):
    prompt = ("<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
              "<|im_start|>assistant\n")
    r = client.completions.create(model="smollm2", prompt=prompt, temperature=0, max_tokens=24)
    assert r.choices[0].text == "The capital of France is Paris."
    assert r.usage.prompt_tokens == 16
    cli = subprocess.run([NXRT, "generate", folder, "--prompt", prompt, "--max-tokens", "24"],
                         capture_output=True, timeout=120)
    assert cli.stdout.decode() == r.choices[0].text + "\n"


def test_streaming_equals_the_non_streamed_twin(client):
    kw = dict(model="smollm2", messages=QUESTION, max_tokens=40, temperature=0.9, seed=11)
    whole = client.chat.completions.create(**kw)
    pieces, finish, usage = [], None, None
    for chunk in client.chat.completions.create(stream=True,
                                                stream_options={"include_usage": True}, **kw):
        if chunk.usage:
            usage = chunk.usage
        for c in chunk.choices:
            pieces.append(c.delta.content or "")
            finish = c.finish_reason or finish
    assert "".join(pieces) == whole.choices[0].message.content
    assert finish == whole.choices[0].finish_reason
    assert usage.completion_tokens == whole.usage.completion_tokens


def test_chat_logprobs_spell_out_the_reply(client):
    r = client.chat.completions.create(model="smollm2", messages=QUESTION, temperature=0,
                                       max_tokens=32, logprobs=True, top_logprobs=3)
    content = r.choices[0].logprobs.content
    assert "".join(t.token for t in content) == r.choices[0].message.content
    assert bytes(b for t in content for b in t.bytes).decode() == r.choices[0].message.content
    assert r.choices[0].finish_reason == "stop"
    assert len(content) == r.usage.completion_tokens - 1  # the EOS that ended it is not text
    for t in content:
        assert t.logprob <= 0.0
        assert len(t.top_logprobs) == 3
        tops = [x.logprob for x in t.top_logprobs]
        assert tops == sorted(tops, reverse=True)
        # Greedy and no penalties: the chosen token is the likeliest one.
        assert t.top_logprobs[0].token == t.token
        assert abs(t.top_logprobs[0].logprob - t.logprob) < 1e-6


def test_n_choices_each_a_generation(client):
    """n choices: each its own generation, seeded seed + i, so a seeded request gives the
    same choices again; greedy choices are all the same text; usage counts the prompt
    once and every choice's tokens."""
    kw = dict(model="smollm2", messages=QUESTION, max_tokens=12)
    r = client.chat.completions.create(n=3, temperature=1.0, seed=11, **kw)
    assert [c.index for c in r.choices] == [0, 1, 2]
    texts = [c.message.content for c in r.choices]
    assert len(set(texts)) > 1
    again = client.chat.completions.create(n=3, temperature=1.0, seed=11, **kw)
    assert [c.message.content for c in again.choices] == texts
    # Choice i is what a single request with seed 11 + i gives.
    single = client.chat.completions.create(temperature=1.0, seed=12, **kw)
    assert single.choices[0].message.content == texts[1]
    assert r.usage.prompt_tokens == single.usage.prompt_tokens
    greedy = client.chat.completions.create(n=2, temperature=0, **kw)
    one = client.chat.completions.create(temperature=0, **kw)
    assert [c.message.content for c in greedy.choices] == [one.choices[0].message.content] * 2
    assert greedy.usage.completion_tokens == 2 * one.usage.completion_tokens
    assert greedy.usage.prompt_tokens == one.usage.prompt_tokens


def test_streamed_n_choices_interleave_and_equal_their_twins(client):
    """n choices streamed: every chunk names its choice, each choice gets the role first and
    one finish chunk, and joined they are the non-streamed choices (seeded seed + i)."""
    kw = dict(model="smollm2", messages=QUESTION, max_tokens=16, temperature=1.0, seed=5, n=3)
    whole = client.chat.completions.create(**kw)
    pieces, finish, roles, usage = {}, {}, {}, None
    for chunk in client.chat.completions.create(stream=True,
                                                stream_options={"include_usage": True}, **kw):
        if chunk.usage:
            usage = chunk.usage
        for c in chunk.choices:
            if c.delta.role:
                assert c.index not in pieces, "the role comes in the choice's first chunk"
                roles[c.index] = c.delta.role
            pieces.setdefault(c.index, []).append(c.delta.content or "")
            if c.finish_reason:
                assert c.index not in finish
                finish[c.index] = c.finish_reason
    assert sorted(pieces) == [0, 1, 2] and set(roles.values()) == {"assistant"}
    assert ["".join(pieces[i]) for i in range(3)] == [c.message.content for c in whole.choices]
    assert [finish[i] for i in range(3)] == [c.finish_reason for c in whole.choices]
    assert usage.completion_tokens == whole.usage.completion_tokens
    assert usage.prompt_tokens == whole.usage.prompt_tokens


def test_json_object_output_always_parses(client):
    """response_format json_object: constrained decoding keeps every token a continuation
    of one JSON object and stops when it closes, so the reply parses, greedy or sampled."""
    ask = [{"role": "user", "content": "Describe a cat as JSON with its name, age and color."}]
    stopped = 0
    for kw in (dict(temperature=0), dict(temperature=1.0, seed=3), dict(temperature=1.0, seed=4)):
        r = client.chat.completions.create(model="smollm2", messages=ask, max_tokens=300,
                                           response_format={"type": "json_object"}, **kw)
        text = r.choices[0].message.content
        assert text.lstrip().startswith("{"), (kw, text)
        if kw["temperature"] == 0:
            assert r.choices[0].finish_reason == "stop", text
        if r.choices[0].finish_reason == "stop":  # "length" cuts an object short
            assert isinstance(json.loads(text), dict), (kw, text)
            stopped += 1
    assert stopped >= 2
    # Streamed: the same constraint, the pieces join into the same object.
    streamed = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model="smollm2", messages=ask, max_tokens=200, temperature=0, stream=True,
        response_format={"type": "json_object"}) if c.choices)
    greedy = client.chat.completions.create(model="smollm2", messages=ask, max_tokens=200,
                                            temperature=0, response_format={"type": "json_object"})
    assert streamed == greedy.choices[0].message.content


CAT_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 40},
        "age": {"type": "integer"},
        "color": {"enum": ["black", "white", "orange", "grey"]},
        "indoor": {"type": "boolean"},
        "friends": {"type": "array", "items": {"$ref": "#/$defs/friend"}, "maxItems": 3},
        "weight_kg": {"anyOf": [{"type": "number"}, {"type": "null"}]},
    },
    "required": ["name", "age", "color", "indoor", "friends", "weight_kg"],
    "additionalProperties": False,
    "$defs": {"friend": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 20}, "species": {"const": "cat"}},
        "required": ["name", "species"], "additionalProperties": False}},
}


def test_json_schema_output_parses_and_matches(client):
    """response_format json_schema: constrained decoding over the vocabulary keeps every
    token inside what the schema allows (types, enums, const, anyOf, $ref, required
    members, string lengths, item counts), so a finished reply parses and validates,
    greedy or sampled, streamed or not."""
    jsonschema = pytest.importorskip("jsonschema")
    ask = [{"role": "user", "content": "Describe a cat as JSON: name, age, color, friends."}]
    fmt = {"type": "json_schema",
           "json_schema": {"name": "cat", "schema": CAT_SCHEMA, "strict": True}}
    stopped = 0
    for kw in (dict(temperature=0), dict(temperature=1.0, seed=3), dict(temperature=1.0, seed=5)):
        r = client.chat.completions.create(model="smollm2", messages=ask, max_tokens=300,
                                           response_format=fmt, **kw)
        text = r.choices[0].message.content
        if r.choices[0].finish_reason == "stop":  # "length" cuts the object short
            jsonschema.validate(json.loads(text), CAT_SCHEMA)
            stopped += 1
    assert stopped >= 2
    streamed = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model="smollm2", messages=ask, max_tokens=300, temperature=0, stream=True,
        response_format=fmt) if c.choices)
    whole = client.chat.completions.create(model="smollm2", messages=ask, max_tokens=300,
                                           temperature=0, response_format=fmt)
    assert streamed == whole.choices[0].message.content
    jsonschema.validate(json.loads(streamed), CAT_SCHEMA)


def test_json_schema_from_a_pydantic_model(client):
    """The openai client's structured-output helper: a pydantic model turned into a
    strict schema (nested model by $ref, an Optional as anyOf with null, a Literal as
    enum), parsed back into the model by the client."""
    pydantic = pytest.importorskip("pydantic")
    from typing import Literal, Optional

    class Address(pydantic.BaseModel):
        city: str
        zip_code: Optional[str]

    class Person(pydantic.BaseModel):
        name: str
        age: int
        role: Literal["admin", "user", "guest"]
        address: Address
        nicknames: list[str]

    # (SmolLM2-135M repeats itself in unbounded arrays on some prompts; this one ends.)
    ask = [{"role": "user", "content":
            "Give me a JSON record of a person: name, age, role, address, nicknames."}]
    r = client.chat.completions.parse(model="smollm2", messages=ask, max_tokens=300,
                                      temperature=0, response_format=Person)
    assert r.choices[0].finish_reason == "stop", r.choices[0].message.content
    person = r.choices[0].message.parsed
    assert isinstance(person, Person) and isinstance(person.address, Address)
    assert person.role in ("admin", "user", "guest")


@pytest.mark.parametrize("schema,message", [
    ({"type": "object", "properties": {"zip": {"type": "string", "pattern": "^[0-9]+$"}}},
     "#/properties/zip: keyword 'pattern' is not supported"),
    ({"type": "number"}, "the root schema allows a bare number"),
    ({"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}},
     "reference '#/$defs/nope' names nothing"),
    ({"type": "object", "required": ["a"]}, "required member \"a\" is not in 'properties'"),
])
def test_json_schemas_nxrt_cannot_enforce_are_400_naming_the_keyword(server, schema, message):
    """A schema keyword the constrained decoder cannot enforce is refused, never ignored:
    a reply that merely parses is not one that matches."""
    status, error = _error(server, "POST", "/v1/chat/completions", {
        "messages": QUESTION,
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}})
    assert status == 400 and error["param"] == "response_format"
    assert message in error["message"], error["message"]


def test_streamed_logprobs_equal_the_non_streamed_ones(client, folder):
    """logprobs while streaming: each chunk carries its tokens' entries; joined, they are
    the non-streamed response's, and their text is the streamed text. On the batched
    server and on one whose requests take turns (--batch 1)."""
    import openai
    _check_streamed_logprobs(client)
    serial = _Server(folder, "--batch", "1")
    try:
        _check_streamed_logprobs(openai.OpenAI(base_url=f"http://127.0.0.1:{serial.port}/v1",
                                               api_key="none", max_retries=0))
    finally:
        serial.stop()


def _check_streamed_logprobs(client):
    kw = dict(model="smollm2", messages=QUESTION, max_tokens=24, temperature=0.8, seed=7,
              logprobs=True, top_logprobs=2)
    whole = client.chat.completions.create(**kw)
    entries, text = [], []
    for chunk in client.chat.completions.create(stream=True, **kw):
        for c in chunk.choices:
            text.append(c.delta.content or "")
            if c.logprobs and c.logprobs.content:
                entries.extend(c.logprobs.content)
    want = whole.choices[0].logprobs.content
    assert "".join(text) == whole.choices[0].message.content
    assert [e.token for e in entries] == [e.token for e in want]
    # The second request reuses the first one's prompt from the cache: the same tokens,
    # log-probabilities equal up to the float rounding of the split prompt run.
    assert max(abs(a.logprob - b.logprob) for a, b in zip(entries, want)) < 1e-3
    assert all(len(e.top_logprobs) == 2 for e in entries)
    # The legacy completions form: offsets run on across chunks.
    prompt = "The capital of France is"
    ckw = dict(model="smollm2", prompt=prompt, temperature=0, max_tokens=8, logprobs=1)
    legacy = client.completions.create(**ckw).choices[0].logprobs
    tokens, offsets = [], []
    for chunk in client.completions.create(stream=True, **ckw):
        for c in chunk.choices:
            if c.logprobs:
                tokens.extend(c.logprobs.tokens)
                offsets.extend(c.logprobs.text_offset)
    assert tokens == legacy.tokens and offsets == legacy.text_offset


def test_completion_logprobs_in_the_legacy_form(client):
    r = client.completions.create(model="smollm2", prompt="The capital of France is",
                                  temperature=0, max_tokens=6, logprobs=2)
    lp = r.choices[0].logprobs
    assert "".join(lp.tokens) == r.choices[0].text
    assert lp.text_offset == [sum(len(t.encode()) for t in lp.tokens[:i])
                              for i in range(len(lp.tokens))]
    assert all(len(top) == 2 and max(top.values()) >= lp.token_logprobs[i] - 1e-6
               for i, top in enumerate(lp.top_logprobs))


def test_streamed_completion_ends_with_done(server):
    status, text = server.request(
        "POST", "/v1/completions", {"prompt": "Once upon a time", "max_tokens": 8,
                                    "stream": True},
        {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
    assert status == 200
    events = [e for e in text.decode().split("\n\n") if e]
    assert all(e.startswith("data: ") for e in events)
    assert events[-1] == "data: [DONE]"
    last = json.loads(events[-2][6:])
    assert last["choices"][0]["finish_reason"] == "length"


def test_seed_reproduces_and_stop_strings_cut(client):
    kw = dict(model="smollm2", prompt="The best thing about Paris is", max_tokens=24,
              temperature=1.0, seed=5)
    a = client.completions.create(**kw).choices[0].text
    assert a == client.completions.create(**kw).choices[0].text
    words = a.split()
    assert len(words) > 3
    cut = client.completions.create(stop=[" " + words[3]], **kw).choices[0]
    assert cut.finish_reason == "stop"
    assert a.startswith(cut.text) and " " + words[3] not in cut.text


def _error(server, method, path, body=None, key=KEY, raw=None):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    status, text = server.request(method, path, raw if raw is not None else body, headers)
    return status, json.loads(text)["error"] if text else None


@pytest.mark.parametrize("body,param", [
    ({"messages": "hello"}, "messages"),
    ({"messages": [{"content": "no role"}]}, "messages[0]"),
    ({"messages": QUESTION, "temperature": "hot"}, "temperature"),
    ({"messages": QUESTION, "max_tokens": 0}, "max_tokens"),
    ({"messages": QUESTION, "n": 0}, "n"),
    ({"messages": QUESTION, "n": 17}, "n"),
    ({"messages": QUESTION, "stop": [1, 2]}, "stop"),
    ({"messages": QUESTION, "response_format": {"type": "json_schema"}}, "response_format"),
    ({"messages": QUESTION, "response_format": "json"}, "response_format"),
    ({"messages": QUESTION, "top_logprobs": 2}, "top_logprobs"),
    ({"messages": QUESTION, "logprobs": True, "top_logprobs": 21}, "top_logprobs"),
])
def test_bad_parameters_are_400_naming_them(server, body, param):
    status, error = _error(server, "POST", "/v1/chat/completions", body)
    assert status == 400
    assert error["param"] == param and error["type"] == "invalid_request_error"


def test_malformed_json_unknown_routes_models_and_keys(server):
    status, error = _error(server, "POST", "/v1/chat/completions", raw=b"{not json")
    assert status == 400 and "not valid JSON" in error["message"]
    status, error = _error(server, "GET", "/v1/nothing")
    assert status == 404 and "no route" in error["message"]
    status, error = _error(server, "POST", "/v1/completions", {"model": "gpt-4", "prompt": "x"})
    assert status == 404 and error["code"] == "model_not_found"
    status, error = _error(server, "GET", "/v1/models", key="wrong")
    assert status == 401 and error["code"] == "invalid_api_key"
    status, error = _error(server, "GET", "/v1/models", key=None)
    assert status == 401
    assert server.request("GET", "/health")[0] == 200  # no key needed


def test_huge_body_is_413_and_the_server_keeps_serving(server):
    status, error = _error(server, "POST", "/v1/completions",
                           raw=b'{"prompt": "' + b"a" * (2 << 20) + b'"}')
    assert status == 413
    assert server.request("GET", "/health")[0] == 200


def test_a_slow_client_is_dropped_and_others_are_served(folder):
    # --batch 1: requests take turns on one engine (the path without continuous batching).
    s = _Server(folder, "--read-timeout", 2, "--batch", 1)
    try:
        prompt = ("<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
                  "<|im_start|>assistant\n")
        status, text = s.request("POST", "/v1/completions",
                                 {"prompt": prompt, "max_tokens": 24, "temperature": 0})
        assert json.loads(text)["choices"][0]["text"] == "The capital of France is Paris."
        slow = socket.create_connection(("127.0.0.1", s.port))
        slow.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        assert s.request("GET", "/health")[0] == 200  # served meanwhile
        slow.settimeout(10)
        answer = b""
        start = time.time()
        while chunk := slow.recv(4096):  # answered 400 and closed after the read timeout
            answer += chunk
        assert time.time() - start < 10
        assert answer == b"" or answer.startswith(b"HTTP/1.1 400")
        slow.close()
    finally:
        s.stop()


def test_disconnecting_client_frees_the_engine(server):
    """A streaming client that goes away mid-stream: its generation stops, the next
    request is answered at once, and /metrics counts what happened."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    conn.request("POST", "/v1/completions",
                 json.dumps({"prompt": "Count: 1, 2, 3,", "max_tokens": 4000, "stream": True,
                             "temperature": 0}),
                 {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"})
    res = conn.getresponse()
    assert res.status == 200
    res.read1(64)
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    start = time.time()
    status, _ = server.request("POST", "/v1/completions",
                               {"prompt": "Hi", "max_tokens": 2},
                               {"Authorization": f"Bearer {KEY}"})
    assert status == 200
    assert time.time() - start < 30  # not after 4000 tokens of the dropped stream
    status, text = server.request("GET", "/metrics", headers={"Authorization": f"Bearer {KEY}"})
    metrics = text.decode()
    assert 'nxrt_requests_total{route="/v1/completions",status="200"}' in metrics
    assert "nxrt_time_to_first_token_seconds_count" in metrics
    assert "nxrt_active_sequences 0" in metrics


def test_busy_queue_answers_429(folder):
    s = _Server(folder, "--batch", 2, "--max-queue", 1)
    try:
        body = {"prompt": "Count: 1, 2, 3,", "max_tokens": 200, "temperature": 0,
                "ignore_eos": True}
        results = []

        def call():
            results.append(s.request("POST", "/v1/completions", body)[0])

        threads = [threading.Thread(target=call) for _ in range(5)]
        for t in threads:
            t.start()
            time.sleep(0.2)
        for t in threads:
            t.join()
        assert results.count(200) >= 1
        assert 429 in results
    finally:
        s.stop()


LONG = {"prompt": "Count: 1, 2, 3,", "max_tokens": 4000, "temperature": 0, "ignore_eos": True}


def test_request_timeout_stops_generation_with_504(folder):
    """--request-timeout: a generation that outlives it is stopped; the client gets a 504
    (or, streaming, an error event after the pieces already sent) and the server goes on."""
    s = _Server(folder, "--request-timeout", 2)
    try:
        start = time.time()
        status, error = _error(s, "POST", "/v1/completions", LONG, key=None)
        assert time.time() - start < 20  # not after thousands of tokens
        assert status == 504
        assert error["code"] == "request_timeout" and "--request-timeout (2 s)" in error["message"]
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
        conn.request("POST", "/v1/completions", json.dumps({**LONG, "stream": True}),
                     {"Content-Type": "application/json"})
        events = [line for line in conn.getresponse().read().decode().split("\n\n") if line]
        conn.close()
        assert len(events) > 2  # pieces were streamed before the deadline
        last = json.loads(events[-1][len("data: "):])
        assert last["error"]["code"] == "request_timeout"
        assert "data: [DONE]" not in events
        status, text = s.request("POST", "/v1/completions", {"prompt": "Hi", "max_tokens": 2})
        assert status == 200
        metrics = s.request("GET", "/metrics")[1].decode()
        assert "nxrt_timed_out_requests_total 2" in metrics
    finally:
        s.stop()


def test_request_timeout_counts_the_wait_for_the_engine(folder):
    """--batch 1: requests take turns; one still waiting at its deadline is answered 504
    too, without running."""
    s = _Server(folder, "--request-timeout", 2, "--batch", 1)
    try:
        results = []

        def call():
            results.append(_error(s, "POST", "/v1/completions", LONG, key=None))

        threads = [threading.Thread(target=call) for _ in range(2)]
        for t in threads:
            t.start()
            time.sleep(0.2)
        for t in threads:
            t.join(timeout=60)
        assert [status for status, _ in results] == [504, 504]
        assert all(e["code"] == "request_timeout" for _, e in results)
    finally:
        s.stop()


def test_sigterm_lets_the_request_in_flight_finish(folder):
    s = _Server(folder)
    got = []
    t = threading.Thread(target=lambda: got.append(s.request(
        "POST", "/v1/completions", {"prompt": "Hello", "max_tokens": 48, "temperature": 0})))
    t.start()
    time.sleep(0.5)
    s.proc.send_signal(signal.SIGTERM)
    t.join(timeout=60)
    assert s.proc.wait(timeout=60) == 0
    assert got and got[0][0] == 200
    assert json.loads(got[0][1])["usage"]["completion_tokens"] == 48


def test_concurrent_streams_are_batched_and_equal_their_twins(server, client):
    """Continuous batching: 8 streaming clients at once (sequences join the running batch
    between steps); each stream's text equals the same request's text run alone."""
    prompts = [f"Tell me a fact about the number {i}." for i in range(8)]

    def ask(i, stream):
        kw = dict(model="smollm2", messages=[{"role": "user", "content": prompts[i]}],
                  max_tokens=24, temperature=0)
        if not stream:
            return client.chat.completions.create(**kw).choices[0].message.content
        return "".join(c.choices[0].delta.content or "" for c in
                       client.chat.completions.create(stream=True, **kw) if c.choices)

    streamed = [None] * len(prompts)

    def run(i):
        streamed[i] = ask(i, True)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    alone = [ask(i, False) for i in range(len(prompts))]
    assert streamed == alone
    assert len(set(alone)) > 1
    status, text = server.request("GET", "/metrics", headers={"Authorization": f"Bearer {KEY}"})
    assert "nxrt_active_sequences 0" in text.decode()


def _counter(server, name):
    text = server.request("GET", "/metrics")[1].decode()
    return int(next(line.split()[1] for line in text.splitlines() if line.startswith(name + " ")))


def test_prompts_that_arrive_together_run_together_and_equal_their_twins(folder):
    """Requests that queue while the server is busy join the batch together: their prompts
    run in one run (padded to the longest), and each text equals the same request's on an
    idle server."""
    s = _Server(folder, "--batch", 8)
    try:
        prompts = [f"Question {i}: name a colour whose name starts with the letter {c}."
                   for i, c in enumerate("BGRYPW")]

        def ask(prompt, tokens=12):
            status, text = s.request("POST", "/v1/completions",
                                     {"prompt": prompt, "max_tokens": tokens, "temperature": 0})
            assert status == 200, text
            return json.loads(text)["choices"][0]["text"]

        alone = [ask(p) for p in prompts]
        runs, sequences = (_counter(s, "nxrt_prefill_runs_total"),
                           _counter(s, "nxrt_prefill_sequences_total"))
        assert runs == sequences == len(prompts)
        # A long request keeps the scheduler stepping; the others queue between its steps.
        busy = threading.Thread(target=ask, args=("Tell me a long story.", 96))
        busy.start()
        time.sleep(0.3)
        barrier = threading.Barrier(len(prompts))
        together = [None] * len(prompts)

        def run(i):
            barrier.wait()
            together[i] = ask(prompts[i])

        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(prompts))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        busy.join()
        assert together == alone
        runs = _counter(s, "nxrt_prefill_runs_total") - runs
        sequences = _counter(s, "nxrt_prefill_sequences_total") - sequences
        assert sequences == len(prompts) + 1
        assert runs < sequences  # some prompts ran together
    finally:
        s.stop()


def test_a_sequence_above_a_finished_one_moves_down_and_keeps_its_text(folder):
    """A decode step runs every slot up to the last busy one: when the sequence below
    ends, the one above it moves down (its cache copied) instead of leaving an empty slot
    in every step, and its text is the same as alone."""
    s = _Server(folder, "--batch", 4)

    def start(body):  # a streamed completion, once its first token has come
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=120)
        conn.request("POST", "/v1/completions", json.dumps({**body, "stream": True}),
                     {"Content-Type": "application/json"})
        res = conn.getresponse()
        assert res.status == 200
        first = res.readline()
        assert first.startswith(b"data: ")
        return conn, res, first

    try:
        story = {"prompt": "Write a short note about topic 2.", "max_tokens": 32,
                 "temperature": 0}
        status, text = s.request("POST", "/v1/completions", story)
        assert status == 200, text
        alone = json.loads(text)["choices"][0]["text"]
        assert len(alone) > 40  # long enough to outlive the other note
        # Another note takes slot 0 (its cache holds the shared prefix) and the story slot
        # 1; then the other note's client leaves.
        other, _, _ = start({"prompt": "Write a short note about topic 1.", "max_tokens": 200,
                             "temperature": 0})
        conn, res, first = start(story)
        other.sock.shutdown(socket.SHUT_RDWR)
        other.close()
        text = ""
        for line in [first, *res]:
            if line.startswith(b"data: ") and line.strip() != b"data: [DONE]":
                text += "".join(c["text"] for c in json.loads(line[6:])["choices"])
        conn.close()
        assert text == alone
        assert _counter(s, "nxrt_slot_moves_total") >= 1
    finally:
        s.stop()


def _rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _stream(port, body, drop_after=None):
    """A streamed completion; with drop_after, the client goes away after that many
    bytes. Returns (text, finish_reason, usage) of what it read."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    conn.request("POST", "/v1/completions", json.dumps({**body, "stream": True}),
                 {"Content-Type": "application/json"})
    res = conn.getresponse()
    assert res.status == 200
    if drop_after is not None:
        res.read1(drop_after)
        conn.sock.shutdown(socket.SHUT_RDWR)
        conn.close()
        return None
    text, finish, usage = "", None, None
    for line in res:
        if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
            continue
        event = json.loads(line[6:])
        for choice in event["choices"]:
            text += choice["text"]
            finish = choice.get("finish_reason") or finish
        usage = event.get("usage") or usage
    conn.close()
    return text, finish, usage


def test_32_clients_times_10_requests_all_complete(folder):
    """Load, bounded: 32 streaming clients send 10 requests each to a batching server;
    every one completes with a finish reason and usage that counts what it streamed, and
    the server ends with no sequence active."""
    s = _Server(folder, "--batch", 32, "--max-queue", 64)
    try:
        results, errors = [], []

        def client(i):
            try:
                for r in range(10):
                    body = {"prompt": f"Note {i}.{r}:", "max_tokens": 6, "temperature": 0.8,
                            "seed": 100 * i + r, "stream_options": {"include_usage": True}}
                    results.append((body, *_stream(s.port, body)))
            except Exception as err:  # noqa: BLE001 - reported below
                errors.append(repr(err))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(32)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[:3]
        assert len(results) == 320
        for body, text, finish, usage in results:
            assert finish in ("stop", "length"), (body, finish)
            assert 1 <= usage["completion_tokens"] <= 6 and usage["prompt_tokens"] > 0, usage
            assert text or finish == "stop", body
        status, text = s.request("GET", "/metrics")
        metrics = text.decode()
        assert "nxrt_active_sequences 0" in metrics
        assert 'nxrt_requests_total{route="/v1/completions",status="200"} 320' in metrics
    finally:
        s.stop()


def test_disconnecting_clients_leave_memory_flat(folder):
    """500 requests whose clients go away mid-stream (8 at a time): the server's resident
    memory after them is within a few MiB of what it was after the first 50 (no cache,
    sequence or connection kept per request)."""
    s = _Server(folder, "--batch", 8)
    try:
        body = {"prompt": "Count: 1, 2, 3,", "max_tokens": 400, "temperature": 0}

        def drop(n):
            for _ in range(n):
                _stream(s.port, body, drop_after=200)

        def round_of(total):
            threads = [threading.Thread(target=drop, args=(total // 8,)) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            # The server notices a gone client at its next write: let the last ones end.
            deadline = time.time() + 60
            while time.time() < deadline:
                if "nxrt_active_sequences 0" in s.request("GET", "/metrics")[1].decode():
                    return
                time.sleep(0.2)
            raise AssertionError("sequences still active after their clients left")

        round_of(48)
        before = _rss_kib(s.proc.pid)
        round_of(456)
        after = _rss_kib(s.proc.pid)
        assert after - before < 16 * 1024, (before, after)
        assert s.request("POST", "/v1/completions", {"prompt": "Hi", "max_tokens": 2})[0] == 200
    finally:
        s.stop()
