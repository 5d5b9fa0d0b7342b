"""nxrt.genai.chat_template against jinja2 configured as Hugging Face transformers does
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, its tojson filter,
raise_exception and strftime_now): every case must render to the identical string, or fail
in both. The templates are SmolLM2's real one (from the GGUF file, when present) and ones
written here in the style of the Llama 2/3, Mistral, Gemma, Phi-3, Qwen/ChatML, Zephyr and
tool-calling families; jinja2 is skipped-if-missing, the error tests run without it.

Every case runs against both renderers (the `renderer` fixture): the Python port and the
C++ one (src/genai/chat_template.h, as nxrt._nxrt.CppChatTemplate). The C++ renderer takes
its variables as JSON, so its cases hand jinja2 the same variables after a JSON round trip
(tuples become lists); tests that pass Python objects JSON cannot carry stay Python-only."""

import datetime
import json
import os

import pytest

from nxrt.genai.chat_template import ChatTemplate, TemplateError

SMOLLM2_GGUF = os.path.join(os.path.expanduser("~"), ".cache", "nxrt-zoo", "gguf",
                            "SmolLM2-135M-Instruct.Q4_1.gguf")


# -- the two renderers -----------------------------------------------------------------------


class _CppTemplate:
    """nxrt._nxrt.CppChatTemplate behind ChatTemplate's interface: the variables go over as
    a JSON object; failures raise TemplateError itself (the binding raises it)."""

    def __init__(self, source, **limits):
        from nxrt import _nxrt

        self._t = _nxrt.CppChatTemplate(source, **limits)

    def render(self, messages=None, add_generation_prompt=False, **variables):
        context = dict(variables)
        if messages is not None:
            context["messages"] = messages
        context["add_generation_prompt"] = add_generation_prompt
        return self._t.render(json.dumps(context))


@pytest.fixture(params=["python", "cpp"])
def renderer(request):
    """The class to render with: ChatTemplate, or the C++ port behind the same interface."""
    if request.param == "python":
        return ChatTemplate
    from nxrt import _nxrt

    if not hasattr(_nxrt, "CppChatTemplate"):
        pytest.skip("this _nxrt was built without nxrt_genai (no CppChatTemplate)")
    return _CppTemplate


# -- the reference ---------------------------------------------------------------------------

_ENV = None


def _env():
    """jinja2 as transformers' chat_template_utils sets it up."""
    global _ENV
    if _ENV is None:
        jinja2 = pytest.importorskip("jinja2")
        import jinja2.ext
        import jinja2.nodes
        import jinja2.sandbox

        class Generation(jinja2.ext.Extension):
            # transformers' AssistantTracker: {% generation %} renders its body, in a scope.
            tags = {"generation"}

            def parse(self, parser):
                lineno = next(parser.stream).lineno
                body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
                return jinja2.nodes.Scope(body).set_lineno(lineno)

        def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
            return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent,
                              separators=separators, sort_keys=sort_keys)

        def raise_exception(message):
            raise jinja2.exceptions.TemplateError(message)

        env = jinja2.sandbox.ImmutableSandboxedEnvironment(
            trim_blocks=True, lstrip_blocks=True, extensions=[Generation, jinja2.ext.loopcontrols])
        env.filters["tojson"] = tojson
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
        _ENV = env
    return _ENV


def _check(renderer, source, **variables):
    """Renders with jinja2 and `renderer`: the texts must be equal, or both must fail; when
    the template failed through raise_exception, with the same message. Returns "ok" or
    "error"."""
    env = _env()  # skips without jinja2
    import jinja2

    if renderer is _CppTemplate:  # what the C++ renderer sees: the variables as JSON
        variables = json.loads(json.dumps(variables))

    template = env.from_string(source)  # a syntax error here is a bad test
    try:
        want = "ok", template.render(**variables)
    except jinja2.exceptions.TemplateRuntimeError as e:
        want = "error", f"({type(e).__name__}: {e})"
    except jinja2.exceptions.TemplateError as e:  # exactly what raise_exception raises
        want = "error", str(e)
    except Exception as e:  # noqa: BLE001 - any other failure only has to fail here too
        want = "error", f"({type(e).__name__}: {e})"
    try:
        got = "ok", renderer(source).render(**variables)
    except TemplateError as e:
        got = "error", e.message
    if want[0] == got[0] == "error" and want[1].startswith("("):
        return "error"
    assert got == want, f"\ntemplate: {source!r}\nvariables: {variables!r}"
    return got[0]


# -- templates written for these tests, in the style of the model families -------------------

CHATML = r"""{%- if messages and messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- set rest = messages[1:] %}
{%- else %}
    {{- '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}
    {%- set rest = messages %}
{%- endif %}
{%- for m in rest %}
    {{- '<|im_start|>' ~ m.role ~ '\n' ~ m.content ~ '<|im_end|>' ~ '\n' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"""

LLAMA3 = r"""{{ bos_token }}
{%- if custom_tools is defined %}{% set tools = custom_tools %}{% endif %}
{%- if not date_string is defined %}
    {%- set date_string = strftime_now("%Y") %}
{%- endif %}
{%- if messages[0].role == 'system' %}
    {%- set system = messages[0].content | trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system = "" %}
{%- endif %}
<|start_header_id|>system<|end_header_id|>

Cutting Knowledge Date: December 2023
Today Date: {{ date_string }}

{{ system }}<|eot_id|>
{% for message in messages %}
<|start_header_id|>{{ message['role'] }}<|end_header_id|>

{{ message['content'] | trim }}<|eot_id|>
{% endfor %}
{% if add_generation_prompt %}
<|start_header_id|>assistant<|end_header_id|>


{% endif %}"""

LLAMA2 = r"""{% if messages[0]['role'] == 'system' %}
{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}
{% else %}
{% set loop_messages = messages %}{% set system_message = false %}
{% endif %}
{% for message in loop_messages %}
{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}
{% endif %}
{% if loop.index0 == 0 and system_message != false %}
{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}
{% else %}
{% set content = message['content'] %}
{% endif %}
{% if message['role'] == 'user' %}
{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}
{% elif message['role'] == 'assistant' %}
{{ ' '  + content.strip() + ' ' + eos_token }}
{% endif %}
{% endfor %}"""

MISTRAL = r"""{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('After the system message, the roles must go user, assistant, ...') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {%- if loop.first and system_message is defined %}
            {{- ' [INST] ' + system_message + '\n\n' + message['content'] + ' [/INST]' }}
        {%- else %}
            {{- ' [INST] ' + message['content'] + ' [/INST]' }}
        {%- endif %}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + message['content'] + eos_token }}
    {%- else %}
        {{- raise_exception('Only system, user and assistant roles are supported here.') }}
    {%- endif %}
{%- endfor %}
"""

GEMMA = r"""{{ bos_token }}
{% if messages[0]['role'] == 'system' %}
    {{ raise_exception('This model has no system role.') }}
{% endif %}
{% for message in messages %}
    {% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{ raise_exception('Roles must alternate between user and model.') }}
    {% endif %}
    {% set role = 'model' if message['role'] == 'assistant' else message['role'] %}
    {{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}
{% endfor %}
{% if add_generation_prompt %}
    {{'<start_of_turn>model\n'}}
{% endif %}
"""

PHI3 = r"""{% for message in messages %}
  {# each turn on its own lines: role tag, text, end marker #}
  {% if message['role'] == 'system' and message['content'] %}
{{'<|system|>\n' + message['content'] + '<|end|>\n'}}
  {%- elif message['role'] == 'user' %}
{{'<|user|>\n' + message['content'] + '<|end|>\n'}}
  {%- elif message['role'] == 'assistant' %}
{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}
  {%- endif %}
{% endfor %}
{% if add_generation_prompt %}
{{ '<|assistant|>\n' }}
{%- else %}
{{ eos_token }}
{%- endif %}"""

ZEPHYR = r"""{% for message in messages %}
{% if message['role'] == 'user' %}
{{ '<|user|>\n' + message['content'] + eos_token }}
{% elif message['role'] == 'system' %}
{{ '<|system|>\n' + message['content'] + eos_token }}
{% elif message['role'] == 'assistant' %}
{{ '<|assistant|>\n'  + message['content'] + eos_token }}
{% endif %}
{% if loop.last and add_generation_prompt %}
{{ '<|assistant|>' }}
{% endif %}
{% endfor %}"""

TOOLS = r"""{#- A tool-calling template: system text and tool signatures first, then the turns;
    assistant turns may carry tool calls, tool results come back in 'tool' turns. -#}
{%- macro describe(tool, indent=none) -%}
    {%- set f = tool.function if tool.function is defined else tool -%}
    {{- {"name": f.name, "description": f.description | default(''),
         "parameters": f.parameters | default({})} | tojson(indent=indent) -}}
{%- endmacro -%}
{%- macro call_text(call) -%}
    {%- set payload = {"name": call.function.name, "arguments": call.function.arguments} -%}
    <tool_call>{{ payload | tojson }}</tool_call>
{%- endmacro -%}
{%- set ns = namespace(system='You are a helpful assistant.', last_user=-1, tool_turns=0) -%}
{%- set systems = messages | selectattr('role', 'equalto', 'system') | list -%}
{%- if systems | length > 0 %}{% set ns.system = systems[0]['content'] %}{% endif -%}
{%- for m in messages -%}
    {%- if m.role == 'user' %}{% set ns.last_user = loop.index0 %}{% endif -%}
    {%- if m.role == 'tool' %}{% set ns.tool_turns = ns.tool_turns + 1 %}{% endif -%}
{%- endfor -%}
<|im_start|>system
{{ ns.system }}
{%- if tools is defined and tools %}


# Tools ({{ tools | length }})
{% for tool in tools %}
{{ loop.index }}. {{ describe(tool) }}{% if not loop.last %},{% endif %}

{% endfor %}
Answer with <tool_call>{"name": ..., "arguments": ...}</tool_call> to use one.
{%- endif %}
<|im_end|>
{% for message in messages | rejectattr('role', 'equalto', 'system') %}
    {%- if message.role == 'tool' %}
        {%- if loop.previtem is not defined or loop.previtem.role != 'tool' %}
<|im_start|>user
        {%- endif %}

<tool_response>
{{ message.content if message.content is string else message.content | tojson }}
</tool_response>
        {%- if loop.last or loop.nextitem.role != 'tool' %}
<|im_end|>
{% endif %}
    {%- else %}
<|im_start|>{{ message.role }}
{% if message.content %}{{ message.content | trim }}{% endif %}
        {%- if message.tool_calls is defined and message.tool_calls %}
            {%- for call in message.tool_calls %}
                {%- if loop.first and message.content %}{{ '\n' }}{% endif %}
{{ call_text(call) }}
            {%- endfor %}
        {%- endif %}
<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}
<|im_start|>assistant
{% endif %}
{#- ns.tool_turns counted {{ ns.tool_turns }} -#}"""

GENERATION = r"""{% for message in messages %}
{% if message.role == 'assistant' %}
{% generation %}{% set shown = message.content | upper %}{{ shown }}{% endgeneration %}
{{ shown | default('(scoped)') }}
{% else %}
{{ message.role }}: {{ message.content }}
{% endif %}
{% endfor %}"""

TEMPLATES = {"chatml": CHATML, "llama3": LLAMA3, "llama2": LLAMA2, "mistral": MISTRAL,
             "gemma": GEMMA, "phi3": PHI3, "zephyr": ZEPHYR, "tools": TOOLS,
             "generation": GENERATION}

TOOL_SPECS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "Name, e.g. 'Zürich'"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}}},
    {"name": "now", "parameters": {}},
]

CONVERSATIONS = {
    "user": [{"role": "user", "content": "What is the capital of France?"}],
    "system_user": [{"role": "system", "content": "You answer in one word."},
                    {"role": "user", "content": "Capital of Japan?"}],
    "multi_turn": [{"role": "system", "content": "Be brief."},
                   {"role": "user", "content": "Hi!"},
                   {"role": "assistant", "content": "Hello. How can I help?"},
                   {"role": "user", "content": "Tell me a joke.\nA short one."},
                   {"role": "assistant", "content": "  Why did the GPU cross the road?  "},
                   {"role": "user", "content": "Why?"}],
    "ends_with_assistant": [{"role": "user", "content": "2+2?"},
                            {"role": "assistant", "content": "4"}],
    "empty_content": [{"role": "system", "content": ""},
                      {"role": "user", "content": ""}],
    "unicode": [{"role": "user", "content": "Grüße, 你好, مرحبا, 🙂🚀, e\u0301, \u00a0nbsp\t"},
                {"role": "assistant", "content": "Ça va ? — ✓"},
                {"role": "user", "content": "日本語で答えて。"}],
    "jinja_looking": [{"role": "system", "content": "{{ not a tag }} {% if x %}y{% endif %}"},
                      {"role": "user", "content": "{# comment? #} {{ messages }} {%- raw -%}"},
                      {"role": "assistant", "content": "'quotes' \"double\" \\n backslash"},
                      {"role": "user", "content": "<|im_end|> <s> [INST] </s>"}],
    "whitespace": [{"role": "user", "content": "\n\n  padded  \n\n"},
                   {"role": "assistant", "content": "\t\ttabs\t"},
                   {"role": "user", "content": "line1\r\nline2\rline3"}],
    "not_alternating": [{"role": "user", "content": "one"},
                        {"role": "user", "content": "two"}],
    "tool_calls": [
        {"role": "system", "content": "Use tools when needed."},
        {"role": "user", "content": "Weather in Zürich and the time?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather",
                                              "arguments": {"city": "Zürich"}}},
            {"type": "function", "function": {"name": "now", "arguments": {}}}]},
        {"role": "tool", "name": "get_weather", "content": {"temp": 21, "sky": "clear"}},
        {"role": "tool", "name": "now", "content": "12:00"},
        {"role": "assistant", "content": "It is 21 °C and clear; the time is 12:00."},
        {"role": "user", "content": "Thanks"}],
    "only_system": [{"role": "system", "content": "Nothing else."}],
}


@pytest.mark.parametrize("generation_prompt", [True, False])
@pytest.mark.parametrize("conversation", sorted(CONVERSATIONS))
@pytest.mark.parametrize("template", sorted(TEMPLATES))
def test_templates_match_jinja2(renderer, template, conversation, generation_prompt):
    variables = dict(messages=CONVERSATIONS[conversation],
                     add_generation_prompt=generation_prompt,
                     bos_token="<s>", eos_token="</s>")
    if template == "tools":
        variables["tools"] = TOOL_SPECS
    if template == "llama3" and conversation != "user":
        variables["date_string"] = "26 Jul 2024"  # else strftime_now("%Y") (both read now)
    _check(renderer, TEMPLATES[template], **variables)


def test_templates_render_what_they_should(renderer):
    """A few spot checks that the comparisons above compare real output."""
    t = renderer(CHATML)
    assert t.render(messages=CONVERSATIONS["user"], add_generation_prompt=True) == (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
        "What is the capital of France?<|im_end|>\n<|im_start|>assistant\n")
    text = renderer(MISTRAL).render(messages=CONVERSATIONS["system_user"],
                                    bos_token="<s>", eos_token="</s>")
    assert text == "<s> [INST] You answer in one word.\n\nCapital of Japan? [/INST]"
    with pytest.raises(TemplateError, match="the roles must go user, assistant, ...$"):
        renderer(MISTRAL).render(messages=CONVERSATIONS["not_alternating"])
    text = renderer(TOOLS).render(messages=CONVERSATIONS["tool_calls"], tools=TOOL_SPECS)
    assert '<tool_call>{"name": "get_weather", "arguments": {"city": "Zürich"}}' in text
    assert "# Tools (2)" in text and "<tool_response>\n12:00\n</tool_response>" in text


def test_template_without_messages_variables(renderer):
    _check(renderer, CHATML, messages=[], add_generation_prompt=True)
    _check(renderer, ZEPHYR, messages=[])
    _check(renderer, "{{ bos_token }}|{{ eos_token }}|{{ messages | length }}")


# -- SmolLM2's own template ------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2_template():
    if not os.path.isfile(SMOLLM2_GGUF):
        pytest.skip(f"{SMOLLM2_GGUF} is not there (scripts/fetch_zoo.py fetches it)")
    from nxrt.genai.gguf import GGUFFile

    return GGUFFile(SMOLLM2_GGUF).metadata["tokenizer.chat_template"]


@pytest.mark.parametrize("generation_prompt", [True, False])
@pytest.mark.parametrize("conversation", sorted(CONVERSATIONS))
def test_smollm2_template_matches_jinja2(renderer, smollm2_template, conversation,
                                         generation_prompt):
    _check(renderer, smollm2_template, messages=CONVERSATIONS[conversation],
           add_generation_prompt=generation_prompt, bos_token="<|im_start|>",
           eos_token="<|im_end|>")


def test_smollm2_template_adds_its_system_prompt(renderer, smollm2_template):
    text = renderer(smollm2_template).render(messages=CONVERSATIONS["user"],
                                             add_generation_prompt=True)
    assert text.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert text.endswith("<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
                         "<|im_start|>assistant\n")


# -- the language, piece by piece ------------------------------------------------------------

WHITESPACE = [
    "  {% if true %}\n  x\n  {% endif %}\n  {# c #}\n  y  {%+ if 1 %}z{% endif +%}\nw\n",
    "a\n  {% raw %}\n  {{ x }}\n  {% endraw %}\nb",
    "a  {%- raw -%}  x  {%- endraw -%}  b",
    "a\n{{+ 1 }}\n{{- 2 -}}\n  c",
    "{% for i in [1, 2] %}\n  {{ i }}\n{% endfor %}\n",
    "{% for i in [1, 2] -%}\n  {{ i }}\n{%- endfor %}",
    "x  {#- a comment -#}  y\n  {# another #}\nz",
    "x {# +#}\ny\n\t {#+ keep #}\n",
    "{%- if true -%}\n\n  a  \n\n{%- endif -%}\n\n",
    "line\r\nwindows\r\n{% if 1 %}\r\n  x\r\n{% endif %}\r\n",
    "  {{ 'var tags do not lstrip' }}\n  {% set a = 1 %}  after\n",
    "{% if 1 %}  {% if 1 %}inner{% endif %}  {% endif %}",
    "\t\t{% if 1 %}tab{% endif %}\n",
    "keep trailing\n\n",
    "{{ 'a' }}{# \n multi \n line #}\n{{ 'b' }}",
    "{% macro m() %}\n  body\n{% endmacro %}\n[{{ m() }}]\n",
    "{% set x %}\n  captured\n{% endset %}\n<{{ x }}>",
]


@pytest.mark.parametrize("source", WHITESPACE)
def test_whitespace_control(renderer, source):
    _check(renderer, source, x=1)


DATA = {
    "d": {"a": 1, "b": [1, 2, 3], "items": "shadow", "nested": {"k": "v"}, "_hidden": 7},
    "xs": [3, 1, 2], "words": ["b", "A", "a", "c"], "s": "Hello, World", "n": None,
    "people": [{"name": "Ann", "age": 31, "role": "user"},
               {"name": "bob", "age": 25, "role": "system"},
               {"name": "Cy", "role": "user"}],
    "f": 2.5, "i": 7, "t": (1, "two"), "e": [], "empty": "",
}

EXPRESSIONS = [
    # literals
    "'single' ~ \"double\" ~ 'esc\\n\\t\\x41\\u00e9\\N{BULLET}\\\\ \\d \\''",
    "'a' 'b' \"c\"", "1_000 + 0x1f + 0o7 + 0b11", "1e3", "1.5e-1", "-1.25", "42",
    "true ~ True ~ false ~ none ~ None", "[1, 'a', [2], {'k': 3},]", "{'a': 1, 'b': [2],}",
    "()", "(1,)", "(1, 2)", "1, 'a'", "[]", "{}",
    # access
    "d.a", "d['a']", "d['items']", "d.nested.k", "d['nested']['k']", "d.missing",
    "d.missing is defined", "d['b'][0]", "d.b.1", "xs[-1]", "xs[10]", "xs[10] is defined",
    "xs[1:]", "xs[:1]", "xs[::-1]", "xs[::2]", "s[7:]", "s[-5:-1]", "n.x", "n['x']", "i.x",
    "d._hidden", "t[0]", "t.1", "d.get('a')", "d.get('zz', 'dflt')", "d.keys() | list",
    "d.values() | list | length", "d.items() | list | first", "xs.count(1)", "xs.index(2)",
    "people[0].name", "people[2].age is defined", "e[0] is undefined", "5[1:] is defined",
    # arithmetic and operators
    "1 + 2 * 3", "(1 + 2) * 3", "7 / 2", "7 // 2", "-7 // 2", "7 % 3", "-7 % 3", "2 ** 10",
    "-2 ** 2", "-2 ** (i - 5)", "(-2) ** (i - 5)", "2 ** 3 ** 2", "'ab' * 3", "[1] * 3",
    "xs + [9]", "'a' ~ 1 ~ none ~ u",
    "'a' ~ 1 * 2", "1 - 2 - 3", "10 / 4 * 2", "+i", "-f", "'x' + 'y'", "1 + true",
    "'%s and %d' % ('a', 3)", "'%(x)s!' % {'x': 5}", "'%5s|%-3d|%.2f' % ('a', 2, f)",
    "'{} {x}'.format(1, x=2)", "'{:>6}|{:.3f}'.format('r', f)",
    # comparisons and logic
    "1 < 2 < 3", "3 > 2 > 2", "1 == 1.0", "'a' != 'b'", "1 in xs", "9 not in xs",
    "'ell' in s", "'a' in d", "u == u", "u == none", "n == none", "not u", "not 0 and 1",
    "0 or 'fallback'", "'' or u or 0", "1 and 'both'", "u and 1", "not not i",
    "'yes' if i > 5 else 'no'", "'yes' if i > 50", "1 if false else 2 if false else 3",
    "s.startswith('He') and s.endswith('ld')", "(not 1) == false",
    # tests
    "u is defined", "u is undefined", "n is none", "n is not none", "s is string",
    "d is mapping", "xs is mapping", "xs is iterable", "i is iterable", "s is sequence",
    "d is sequence", "u is sequence", "i is number", "f is number", "true is number",
    "true is boolean", "1 is boolean", "true is true", "1 is true", "false is false",
    "i is odd", "i is even", "i is divisibleby 7", "i is divisibleby(2)", "i is integer",
    "f is float", "i is float", "s is lower", "'abc' is lower", "'ABC' is upper",
    "'a' is equalto 'a'", "i is eq 7", "i is ne 7", "i is lt 8", "i is le 7", "i is gt 8",
    "i is ge 7", "i is greaterthan 1", "i is lessthan 1", "1 is in xs", "n is sameas none",
    "i is not odd", "'upper' is filter", "'nope' is filter", "'odd' is test",
    "xs is callable", "d.get is callable",
    # string methods
    "'  pad  '.strip()", "'xxhixx'.strip('x')", "'  a'.lstrip()", "'a  '.rstrip()",
    "'a,b,,c'.split(',')", "'a b  c'.split()", "'a b c'.split(' ', 1)", "'a-b'.rsplit('-')",
    "'Hello'.upper()", "'Hello'.lower()", "'hello world'.title()", "'hi'.capitalize()",
    "'aaa'.replace('a', 'b', 2)", "'x'.center(5)", "'7'.zfill(3)", "', '.join(['a', 'b'])",
    "'abc'.find('c')", "'a\\nb'.splitlines()", "'abc'.endswith(('c', 'd'))",
    "'Ab'.swapcase()", "'12'.isdigit()", "'ab'.isalpha()", "'x=1'.partition('=')",
    "'abc'.removeprefix('a')", "'a\\tb'.expandtabs(4)", "'ab'.ljust(4) ~ '|'",
    # filters
    "'  x  ' | trim", "'xxhixx' | trim('x')", "s | upper", "s | lower", "'hELLO' | capitalize",
    "\"o'neil hello-world (x [y <z\" | title", "xs | length", "s | count", "d | length",
    "xs | first", "xs | last", "s | first", "s | last", "d | first", "e | first", "e | last",
    "xs | join", "xs | join(', ')", "people | join(', ', attribute='name')",
    "u | default('dflt')", "n | default('dflt')", "empty | default('dflt')",
    "empty | default('dflt', true)", "n | d('x', boolean=true)", "'a b a' | replace('a', 'o')",
    "'a a a' | replace('a', 'o', 2)", "i | string ~ 'x'", "xs | string", "'42' | int",
    "'4.7' | int", "4.7 | int", "'x' | int", "'x' | int(-1)", "'0x1A' | int(0, 16)",
    "'101' | int(base=2)", "true | int", "n | int", "'2.5' | float", "'x' | float", "i | float",
    "s | list", "d | list", "xs | list", "d | tojson", "people | tojson",
    "d | tojson(indent=2)", "'é\"<>' | tojson", "'é' | tojson(true)", "t | tojson",
    "d | tojson(sort_keys=true)", "d | tojson(separators=(',', ':'))", "n | tojson",
    "d | items | list", "u | items | list",
    "people | selectattr('role', 'equalto', 'user') | map(attribute='name') | list",
    "people | rejectattr('role', 'eq', 'user') | map(attribute='name') | join",
    "people | selectattr('age') | list | length", "people | selectattr('age', 'defined') | list",
    "people | rejectattr('age', 'undefined') | map(attribute='age') | sum",
    "people | selectattr('age', 'gt', 30) | first", "people | map(attribute='age') | list",
    "people | map(attribute='age', default=0) | list", "words | map('upper') | list",
    "words | map('replace', 'a', 'x') | list", "xs | select('odd') | list",
    "xs | reject('odd') | list", "[0, 1, '', 'a', none] | select | list",
    "xs | select('gt', 1) | list", "f | round", "2.567 | round(2)", "2.567 | round(1, 'floor')",
    "2.521 | round(1, 'ceil')", "3 | round", "7 | round(-1)", "'a\\nb\\n' | indent",
    "'a\\n\\nb' | indent(2)", "'a\\n\\nb' | indent(2, true)", "'a\\n\\nb' | indent(2, blank=true)",
    "'a\\nb' | indent('> ', first=true)", "'x' | safe", "words | unique | list",
    "words | unique(case_sensitive=true) | list", "people | unique(attribute='role') | list",
    "xs | reverse | list", "s | reverse", "xs | sort", "xs | sort(reverse=true)", "words | sort",
    "words | sort(case_sensitive=true)",
    "people | sort(attribute='name') | map(attribute='name') | list",
    "people | sort(attribute='role,name') | map(attribute='name') | list",
    "d | dictsort | first", "{'b': 1, 'A': 2} | dictsort",
    "{'b': 1, 'a': 0} | dictsort(by='value')",
    "xs | min", "xs | max", "words | min", "words | max(case_sensitive=true)",
    "people | max(attribute='name')", "e | min", "xs | sum", "xs | sum(start=10)",
    "xs | batch(2) | list", "xs | batch(2, 0) | list",
    "'one two  three' | wordcount", "'hello world and more' | truncate(9)",
    "'hello world' | truncate(5, true)", "'%s-%s' | format('a', 'b')", "-3 | abs",
    "'<a href=\"x\">&' | e", "'<b>' | escape", "'x' | center(7)", "d | attr('items') is defined",
    "d | attr('a')", "s | replace(',', '') | lower | trim", "xs | map('string') | join('+')",
    # globals and loops in expressions
    "range(3) | list", "range(1, 10, 3) | list", "range(3)", "dict(a=1, b=2)",
    "dict([('x', 1)])", "namespace(a=1)", "namespace({'a': 1}, b=2).b",
    # undefined behaviour
    "u", "u | list", "u | length", "u | join", "u | trim", "u | upper", "u | string",
    "u | first", "u | last", "u | sort", "u | map('upper') | list", "u | center(3)",
    "u | sum", "u | min", "u | batch(2) | list", "u | wordcount", "u | e", "u is iterable",
    "'%s' % u", "[u]", "{'k': u}", "'a' in u", "u in [u]", "u | select | list",
]

FAILING_EXPRESSIONS = [
    "u.x", "u['x']", "u()", "u[1:]", "u + 1", "1 + u", "u < 1", "-u", "u is odd", "u | int",
    "u | float", "u | tojson", "u | indent", "u | dictsort", "u | round", "u.x is defined",
    "'a' + 1", "1 / 0", "1 // 0", "'a' < 1", "xs | selectattr('a') | last",
    "xs | selectattr('x') | list | length + 'a'", "people | map(attribute='x.y') | list",
    "i | length", "'x' in none", "d.nope.x", "xs.append(1)", "d.update({})", "d.pop('a')",
    "range(10) | map('nope') | list", "'abc' | items | list",
    "dict | tojson", "namespace() | tojson", "1 | round(2, 'up')", "none()", "i()",
    "raise_exception('stop here')", "{'a': 1} | dictsort(by='x')", "'%d' % 'x'",
    "t | first | upper | int + 'x'", "people | sum(attribute='age')",
]


# jinja2 reads string literals with the unicode-escape codec, which warns about '\\d'.
@pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")
@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_expressions_match_jinja2(renderer, expression):
    kind = _check(renderer, "{{ " + expression + " }}", **DATA)
    assert kind == "ok", expression


@pytest.mark.parametrize("expression", FAILING_EXPRESSIONS)
def test_failing_expressions_fail_in_both(renderer, expression):
    kind = _check(renderer, "{{ " + expression + " }}", **DATA)
    assert kind == "error", expression


STATEMENTS = [
    # scoping: a for loop's body starts fresh each iteration and sets do not leak
    "{% set x = 0 %}{% for i in range(3) %}{{ x }}{% set x = x + 1 %}{{ x }}|{% endfor %}{{ x }}",
    "{% for i in range(3) %}{% if i > 0 %}[{{ y }}]{% endif %}{% set y = i %}{% endfor %}",
    "{% set x = 1 %}{% if true %}{% set x = 2 %}{% endif %}{{ x }}",
    "{% set ns = namespace(n=0, seen=[]) %}{% for i in xs %}{% set ns.n = ns.n + i %}"
    "{% set ns.seen = ns.seen + [i] %}{% endfor %}{{ ns.n }} {{ ns.seen }} {{ ns }}",
    "{% set a, b = [1, 2] %}{{ a }}{{ b }}{% set c = 1, 2 %}{{ c }}",
    "{% set (a, b), c = [[1, 2], 3] %}{{ a }}{{ b }}{{ c }}",
    "{% set x | upper %}ab{{ 'c' }}{% endset %}{{ x }}",
    "{% set x = 1 %}{% set y %}{% set x = 2 %}{% endset %}{{ x }}",
    "{% with a = 1, b = xs %}{{ a }}{{ b }}{% set a = 5 %}{% endwith %}{{ a }}",
    "{% set x = 1 %}{% filter upper %}{% set x = 2 %}a{{ x }}{% endfilter %}{{ x }}",
    "{% filter replace('a', 'b') | upper %}banana{% endfilter %}",
    # loops
    "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
    "{% for k in d %}{{ k }},{% endfor %}", "{% for c in s %}{{ c }}.{% endfor %}",
    "{% for x in xs if x > 1 %}{{ loop.index }}/{{ loop.length }}:{{ x }} {% else %}none"
    "{% endfor %}",
    "{% for x in xs %}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
    "{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}",
    "{% for x in xs %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }} {% endfor %}",
    "{% for x in xs %}{{ loop.previtem is defined }}{{ loop.nextitem is defined }}{% endfor %}",
    "{% for x in xs %}{{ loop.cycle('odd', 'even') }}{{ loop.changed(x > 1) }} {% endfor %}",
    "{% for x in xs %}{{ loop }}{{ loop.depth }}{{ loop.depth0 }}{% endfor %}",
    "{% for x in [] %}{% else %}empty {{ x }}{% endfor %}",
    "{% for x in u %}never{% else %}undefined iterates as empty{% endfor %}",
    "{% for x in [] %}{% else %}{% set y = 1 %}{% endfor %}{{ y }}",
    "{% for a, b in [[1, 2], [3, 4]] %}{{ a }}{{ b }}{% endfor %}{{ a }}",
    "{% for row in [[1, 2], [3]] %}{% for v in row %}{{ loop.index }}{{ v }}{% endfor %}"
    "{{ loop.index }};{% endfor %}",
    "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{{ i }}"
    "{% if i == 5 %}{% break %}{% endif %}{% endfor %}",
    "{% for i in range(3) %}{% for j in range(3) %}{% if j == 1 %}{% break %}{% endif %}"
    "{{ i }}{{ j }} {% endfor %}{% endfor %}",
    "{% for m in people | selectattr('role', 'equalto', 'user') %}{{ m.name }}"
    "{{ ', ' if not loop.last }}{% endfor %}",
    "{% for x in xs | sort | reverse %}{{ x }}{% endfor %}",
    # conditions
    "{% if i > 10 %}a{% elif i > 5 %}b{% elif i > 0 %}c{% else %}d{% endif %}",
    "{% if u %}a{% elif n %}b{% else %}c{% endif %}",
    "{% if xs and not e %}both{% endif %}", "{% if 'a', 'b' %}tuple is true{% endif %}",
    # macros and call blocks
    "{% macro m(a, b='B') %}[{{ a }}{{ b }}]{% endmacro %}{{ m(1) }}{{ m(1, 2) }}{{ m(b=3, a=4) }}",
    "{% macro m(a, b=a) %}{{ a }}{{ b }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1) }}"
    "{{ m(1, 2, 3, z=4) }}",
    "{% macro m() %}{{ x }}{% endmacro %}{% set x = 1 %}{{ m() }}{% set x = 2 %}{{ m() }}",
    "{% macro m() %}{{ x }}{% endmacro %}{% for x in [5] %}{{ m() }}{% endfor %}",
    "{% macro m(a) %}{{ a }}{% endmacro %}{{ m }}|{{ m.name }}|{{ m() }}|",
    "{% macro rec(n) %}{{ n }}{% if n > 0 %}{{ rec(n - 1) }}{% endif %}{% endmacro %}{{ rec(5) }}",
    "{% macro m(a) %}<{{ caller(a) }}>{% endmacro %}{% call(v) m(3) %}[{{ v }}]{% endcall %}",
    "{% macro m() %}<{{ caller() }}>{% endmacro %}{% call m() %}body{% endcall %}",
    "{% macro m(x) %}{{ x | upper }}{% endmacro %}"
    "{{ people | map(attribute='name') | join(m('-')) }}",
    "{% set x = 3 %}{% macro m() %}{% set x = 9 %}{{ x }}{% endmacro %}{{ m() }}{{ x }}",
    "{% set x = 5 %}{% macro m() %}{{ x }}{% set x = 1 %}{{ x }}{% endmacro %}{{ m() }}{{ x }}",
    # a default sees the macro's own parameters, not the outer names they shadow
    "{% set x = 1 %}{% macro m(x=x) %}[{{ x }}]{% endmacro %}{% set x = 2 %}{{ m() }}",
    "{% macro m(a, b=a ~ c, c='C') %}{{ a }}{{ b }}{{ c }}{% endmacro %}{{ m(1) }}{{ m(1, c=3) }}",
    "{% if false %}{% set x = 1 %}{% endif %}[{{ x }}]",
    "{% set items = [1, 2] %}{% for items in items %}{{ items }}{% endfor %}{{ items }}",
    # output of odd values
    "{{ n }} {{ true }} {{ f }} {{ 1.0 }} {{ 10 / 2 }} {{ t }} {{ d.nested }} {{ xs }}",
    "{{ range(2) }} {{ namespace(b=[1]) }} {{ 'a' if false }}|",
]

FAILING_STATEMENTS = [
    "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}",
    "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, z=2) }}",
    "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, a=2) }}",
    "{% set x = 1 %}{% set x.a = 1 %}",
    "{% set a, b = [1, 2, 3] %}",
    "{% for x in i %}{% endfor %}",
    "{% for a, b in xs %}{% endfor %}",
    "{% if u.x %}{% endif %}",
    "{{ raise_exception('Only user and assistant roles are supported!') }}",
    "{% for m in xs %}{% if m > 1 %}{{ raise_exception('too big: ' ~ m) }}{% endif %}{% endfor %}",
]


@pytest.mark.parametrize("source", STATEMENTS)
def test_statements_match_jinja2(renderer, source):
    kind = _check(renderer, source, **DATA)
    assert kind == "ok", source


@pytest.mark.parametrize("source", FAILING_STATEMENTS)
def test_failing_statements_fail_in_both(renderer, source):
    kind = _check(renderer, source, **DATA)
    assert kind == "error", source


def _random_layout(rng, depth=0):
    """Text and tags with every whitespace-control sign, nested ifs and fors."""
    texts = ["", " ", "  ", "\n", "\n  ", " \n", "\t", "a", "b\n", "\n\n", " x ", " \t\n \t"]
    signs = ["", "", "-", "+"]
    parts = []
    for _ in range(rng.randint(1, 5)):
        parts.append(rng.choice(texts))
        r = rng.random()
        if r < 0.2 and depth < 2:
            parts.append("{%" + rng.choice(signs) + " if true " + rng.choice(signs) + "%}"
                         + _random_layout(rng, depth + 1)
                         + "{%" + rng.choice(signs) + " endif " + rng.choice(signs) + "%}")
        elif r < 0.3 and depth < 2:
            parts.append("{% for i in [1, 2] " + rng.choice(signs) + "%}"
                         + _random_layout(rng, depth + 1) + "{%" + rng.choice(signs) + " endfor %}")
        elif r < 0.5:
            parts.append("{{" + rng.choice(["", "-", "+"]) + " 'v' " + rng.choice(["", "-"]) + "}}")
        elif r < 0.65:
            parts.append("{#" + rng.choice(signs) + " c " + rng.choice(signs) + "#}")
        elif r < 0.75:
            parts.append("{%" + rng.choice(signs) + " raw " + rng.choice(["", "-"]) + "%}"
                         + rng.choice(texts) + "{{ x }}" + rng.choice(texts) + "{%"
                         + rng.choice(signs) + " endraw " + rng.choice(signs) + "%}")
        else:
            parts.append("{%" + rng.choice(signs) + " set z = 1 " + rng.choice(signs) + "%}")
    parts.append(rng.choice(texts))
    return "".join(parts)


def test_random_whitespace_layouts_match_jinja2(renderer):
    import random

    rng = random.Random(2024)
    for _ in range(400):
        _check(renderer, _random_layout(rng))


def _random_expression(rng, depth=0):
    atoms = ["1", "2", "0", "-3", "2.5", "'a'", "'B c'", "''", "none", "true", "xs", "e", "d",
             "s", "i", "n", "u", "t", "people", "words", "[1, 'x']", "{'k': 2}", "d.a",
             "xs[0]", "people[1]", "(1, 2)", "range(3)", "empty"]
    ops = ["+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", ">=", "and", "or", "in",
           "not in", "**"]
    filters = ["length", "first", "last", "list", "string", "trim", "upper", "title", "int",
               "float", "join(',')", "default('D')", "tojson", "sort", "reverse|list",
               "unique|list", "items|list", "map('string')|list", "select|list", "sum", "min",
               "round", "abs", "capitalize", "wordcount", "e", "center(4)", "indent(2)",
               "batch(2)|list", "dictsort", "d(1, true)"]
    tests = ["defined", "none", "string", "number", "mapping", "iterable", "sequence", "odd",
             "true", "boolean", "integer", "lower", "in [1, 'a']", "eq 1", "divisibleby 2"]
    r = rng.random()
    if depth > 2 or r < 0.3:
        return rng.choice(atoms)
    sub = lambda: _random_expression(rng, depth + 1)  # noqa: E731
    if r < 0.55:
        return f"{sub()} {rng.choice(ops)} {sub()}"
    if r < 0.7:
        return f"({sub()})|{rng.choice(filters)}"
    if r < 0.8:
        return f"({sub()}) is {rng.choice(['', 'not '])}{rng.choice(tests)}"
    if r < 0.9:
        return f"not {sub()}"
    return f"{sub()} if {sub()}" + (f" else {sub()}" if rng.random() < 0.7 else "")


def test_random_expressions_match_jinja2(renderer):
    import random

    env = _env()
    import jinja2

    rng = random.Random(7)
    for _ in range(600):
        source = "{{ " + _random_expression(rng) + " }}"
        if "reverse" in source or "items" in source:  # may print an iterator's address
            continue
        try:
            env.from_string(source)
        except jinja2.exceptions.TemplateSyntaxError:
            # e.g. a test's argument taken from the inline if: a syntax error in both.
            with pytest.raises(TemplateError):
                renderer(source)
            continue
        _check(renderer, source, **DATA)


def test_strftime_now(renderer):
    year = str(datetime.datetime.now().year)
    assert renderer("{{ strftime_now('%Y') }}").render() in (year, str(int(year) + 1))


# -- errors, limits and safety (no jinja2 needed) -------------------------------------------


@pytest.mark.parametrize("source, line, column, message", [
    ("hello {{ name", 1, 7, r"not closed \(expected '}}'\)"),
    ("a\n{% if x %}\nb\n{% for y in z", 4, 1, r"not closed \(expected '%}'\)"),
    ("x\n  {% if x %}\nyes", 3, 4, r"the 'if' tag at line 2, column 6 is not closed "
                                   r"\(expected 'elif', 'else' or 'endif'\)"),
    ("{% for m in messages %}{% endif %}", 1, 27, r"unexpected tag 'endif' \(expected "
                                                  r"'endfor' or 'else'"),
    ("ok\n{% frobnicate %}", 2, 4, "unknown tag 'frobnicate'"),
    ("{% if x %}{% endif %}{% endif %}", 1, 25, "unexpected tag 'endif': no open block"),
    ("{% include 'x.j2' %}", 1, 4, "'include' tag is not supported"),
    ("{{ 1 + }}", 1, 8, r"expected an expression, got '}}'"),
    ("{{ }}", 1, 4, "expected an expression"),
    ("{{ x y }}", 1, 6, r"expected '}}' to end the print statement, got 'y'"),
    ("{% if x %}{% else x %}{% endif %}", 1, 19, r"expected '%}' to end the 'else' tag"),
    ("{{ x | nofilter }}", 1, 8, "no filter named 'nofilter'"),
    ("{{ x is nottest }}", 1, 9, "no test named 'nottest'"),
    ("{{ 'unclosed }}", 1, 4, "string literal is not closed"),
    ("{{ (1, 2] }}", 1, 9, r"unexpected '\]', expected '\)'"),
    ("{{ a ? b }}", 1, 6, "unexpected character '\\?'"),
    ("{# never closed", 1, 1, r"comment is not closed"),
    ("{% raw %} never closed", 1, 10, "raw block is not closed"),
    ("{% break %}", 1, 4, "'break' outside a for loop"),
    ("{% for x in y recursive %}{% endfor %}", 1, 15, "recursive for loops are not supported"),
    ("{% set 1 = 2 %}", 1, 8, "cannot assign"),
    ("{% for loop in xs %}{% endfor %}", 1, 8, "special 'loop' variable"),
    ("{% for i in xs %}\n  {% set a, loop = 1, 2 %}{% endfor %}", 2, 10, "special 'loop'"),
    ("{% macro m(a=1, b) %}{% endmacro %}", 1, 18, "without a default"),
    ("{{ f(a=1, 2) }}", 1, 11, "positional argument follows keyword"),
    ("{{ '\\x4' }}", 1, 4, r"bad string literal: truncated \\x escape"),
    ("{{ " + "(" * 100 + "1" + ")" * 100 + " }}", 1, None, "nested too deeply"),
])
def test_syntax_errors_say_where_and_what(renderer, source, line, column, message):
    with pytest.raises(TemplateError, match=message) as info:
        renderer(source)
    assert info.value.line == line
    if column is not None:
        assert info.value.column == column
    assert str(info.value).startswith(f"line {line}, column ")
    assert isinstance(info.value, ValueError)


def test_syntax_errors_are_syntax_errors_in_jinja2_too():
    env = _env()
    import jinja2

    for source in ["hello {{ name", "{% if x %}yes", "{% frobnicate %}", "{{ 1 + }}",
                   "{{ x y }}", "{{ x | nofilter }}", "{{ (1, 2] }}", "{% set 1 = 2 %}",
                   "{% for loop in xs %}{% endfor %}",
                   "{% for i in xs %}{% set a, loop = 1, 2 %}{% endfor %}"]:
        with pytest.raises(jinja2.exceptions.TemplateSyntaxError):
            env.from_string(source)


def test_raise_exception_propagates_its_message(renderer):
    t = renderer("{% for m in messages %}\n{% if m.role not in ['user', 'assistant'] %}"
                 "{{ raise_exception('Role ' ~ m.role ~ ' is not supported') }}"
                 "{% endif %}{% endfor %}")
    assert t.render(messages=[{"role": "user", "content": ""}]) == ""
    with pytest.raises(TemplateError) as info:
        t.render(messages=[{"role": "user"}, {"role": "tool"}])
    assert info.value.message == "Role tool is not supported"
    column = len("{% if m.role not in ['user', 'assistant'] %}") + 1  # the {{ }} in it
    assert (info.value.line, info.value.column) == (2, column)
    assert str(info.value) == f"line 2, column {column}: Role tool is not supported"


def test_runtime_errors_are_template_errors_with_a_position(renderer):
    with pytest.raises(TemplateError, match=r"line 2, column 3: .*'x' is undefined"):
        renderer("ok\n  {{ x.y }}").render()
    with pytest.raises(TemplateError, match="line 1, column 1: ZeroDivisionError"):
        renderer("{{ 1 / 0 }}").render()
    with pytest.raises(TemplateError, match=r"line 1, column 16: .*'int' object is not "
                                            r"iterable"):
        renderer("{% macro m() %}{% for x in 3 %}{% endfor %}{% endmacro %}{{ m() }}") \
            .render()


@pytest.mark.parametrize("source", [
    "{{ messages.__class__ }}",
    "{{ messages.__class__.__mro__ }}",
    "{{ messages['__class__'] }}",
    "{{ ''.__class__.__base__.__subclasses__() }}",
    "{{ raise_exception.__globals__ }}",
    "{{ (messages | map(attribute='__class__') | list) }}",
    "{{ messages | attr('__len__') }}",
    "{{ messages[0]._secret }}",
    "{% set ns = namespace() %}{{ ns.__dict__ }}",
    "{% for m in messages %}{{ loop.__class__ }}{% endfor %}",
    "{% macro m() %}{% endmacro %}{{ m.__call__ }}",
])
def test_underscore_attributes_are_refused(renderer, source):
    with pytest.raises(TemplateError, match="refused"):
        renderer(source).render(messages=[{"role": "user", "content": "x"}])


class _Obj:
    data = (i for i in range(1))

    def method(self):  # pragma: no cover - must never run
        raise AssertionError("called")


@pytest.mark.parametrize("source, message", [
    ("{{ messages.append(1) }}", "method 'append' of a list value cannot be called"),
    ("{{ messages[0].update({'role': 'x'}) }}", "'update' of a dict value cannot be called"),
    ("{{ messages[0].clear() }}", "'clear' of a dict value cannot be called"),
    ("{{ 'a'.encode() }}", "'encode' of a str value cannot be called"),
    ("{{ (messages | map('upper')).send(1) }}", "'send' of a generator value"),
    ("{{ obj.method() }}", "'method' of a _Obj value cannot be called"),
    ("{{ obj.data.gi_frame.f_globals }}", "has no attribute 'gi_frame'"),
])
def test_only_allowed_callables_can_be_called(renderer, source, message):
    variables = dict(messages=[{"role": "user", "content": "x"}])
    if renderer is ChatTemplate:
        variables["obj"] = _Obj()
    elif "obj." in source:
        pytest.skip("a Python object: JSON cannot give it to the C++ renderer")
    t = renderer(source)
    with pytest.raises(TemplateError, match=message):
        t.render(**variables)


def test_builtin_objects_expose_only_allowed_methods():
    # Python-only: generators and dict views cannot reach the C++ renderer through JSON.
    # A generator, a dict view, a range: their attributes (gi_frame...) are undefined.
    t = ChatTemplate("{{ g.gi_frame }}|{{ d.items().mapping }}|{{ range(3).start }}|"
                     "{{ g.gi_frame is defined }}")
    assert t.render(g=(i for i in range(1)), d={"a": 1}) == "|||False"


def test_data_objects_expose_their_fields():
    # Python-only: the C++ renderer gets plain JSON data, never Python objects.
    class Message:
        def __init__(self, role, content):
            self.role, self.content = role, content

    text = ChatTemplate(CHATML).render(messages=[Message("user", "hi")])
    assert text.endswith("<|im_start|>user\nhi<|im_end|>\n")


def test_limits_give_clear_errors(renderer):
    with pytest.raises(TemplateError, match="more than 1000 loop iterations"):
        renderer("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}"
                 "{% endfor %}", max_iterations=1000).render()
    with pytest.raises(TemplateError, match="wrote more than 10000 characters"):
        renderer("{% for i in range(1000) %}{{ 'x' * 100 }}{% endfor %}",
                 max_output=10000).render()
    with pytest.raises(TemplateError, match="range.* of 1000000 items"):
        renderer("{% for i in range(1000000) %}{% endfor %}").render()
    with pytest.raises(TemplateError, match="would have"):
        renderer("{{ 'x' * 10 ** 9 }}").render()
    with pytest.raises(TemplateError, match="would have"):
        renderer("{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(40) %}"
                 "{% set ns.s = ns.s ~ ns.s %}{% endfor %}").render()
    with pytest.raises(TemplateError, match="too large"):
        renderer("{{ 10 ** (10 ** 7) }}").render()
    with pytest.raises(TemplateError, match="over the output limit"):
        renderer("{{ '%999999999999d' % 1 }}").render()
    with pytest.raises(TemplateError, match="over the output limit"):
        renderer("{{ '{:>999999999999}'.format(1) }}").render()
    with pytest.raises(TemplateError, match="over the output limit"):
        renderer("{{ 'x'.center(10 ** 12) }}").render()
    with pytest.raises(TemplateError, match="nested more than 40 deep"):
        renderer("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").render()
    with pytest.raises(TemplateError, match="too deeply|nested"):
        renderer("{% if 1 %}" * 300 + "{% endif %}" * 300)
    with pytest.raises(TemplateError, match="out of range"):
        renderer("{{ 1.5 | round(10 ** 9, 'floor') }}").render()


def test_a_slow_template_is_stopped(renderer):
    import time

    t = renderer("{% for i in range(100000) %}{% set s = ('x' * 100000) | upper %}"
                 "{% endfor %}", max_seconds=0.2)
    start = time.monotonic()
    with pytest.raises(TemplateError, match="ran for more than 0.2 s"):
        t.render()
    assert time.monotonic() - start < 5


def test_parsed_once_rendered_many_times(renderer):
    t = renderer(CHATML)
    a = t.render(messages=CONVERSATIONS["user"], add_generation_prompt=True)
    b = t.render(messages=CONVERSATIONS["multi_turn"])
    assert a == t.render(messages=CONVERSATIONS["user"], add_generation_prompt=True)
    assert a != b
