"""Chat templates: a renderer for the subset of Jinja2 that LLM chat templates use.

A model's tokenizer_config.json (or its GGUF file's ``tokenizer.chat_template``) carries a
Jinja2 template that turns a list of messages into the prompt text the model was trained
on. Hugging Face transformers renders it with ``jinja2.sandbox.ImmutableSandboxedEnvironment
(trim_blocks=True, lstrip_blocks=True)`` plus the loopcontrols extension, the globals
``raise_exception(msg)`` and ``strftime_now(fmt)`` and its own ``tojson`` filter; this
module renders the same templates to the same text with the standard library only::

    t = ChatTemplate(source)             # parses once; TemplateError on a syntax error
    prompt = t.render(messages=[{"role": "user", "content": "Hi"}],
                      add_generation_prompt=True, bos_token="<s>", eos_token="</s>")

Supported: text, ``{{ }}``, ``{# #}``, whitespace control (``-`` and ``+``, trim_blocks
and lstrip_blocks as configured above), ``{% raw %}``; the tags if/elif/else, for (tuple
targets, ``if`` filter, else, the loop object, break/continue), set (names, tuples,
``ns.attr``, block set), macro, call, filter, with, generation; the expression language
(literals, attribute/item access, slices, calls, filters, tests, arithmetic, ``~``,
comparisons, ``in``, ``and``/``or``/``not``, inline if); the filters and tests listed in
``FILTERS`` and ``TESTS``; the globals range, dict, namespace, raise_exception and
strftime_now. Not supported: include/import/extends/block, recursive loops, cycler/joiner.

Values: templates read dicts, lists, strings, numbers and objects passed in, and may call
only the non-mutating methods of str, dict and list values (``ALLOWED_METHODS``), the
filters, tests, globals and macros. Attributes that start with ``_`` are refused (Jinja2's
sandbox renders them as undefined; refusing says what went wrong). A name or key that does
not exist is undefined as in Jinja2: it prints as "", is false, iterates as empty, and using
it further (attribute access, arithmetic, a call) is an error. Every failure at render time
is a TemplateError (a ValueError) naming the line and column of the statement.

Limits (per render, ChatTemplate's keyword arguments): ``max_output`` characters written
in all (macro and block output included), ``max_iterations`` loop iterations and macro
calls, ``max_depth`` nested macro calls, ``max_seconds`` of rendering (checked at each loop
iteration and macro call); strings and lists built by operators, filters and methods are
held to max_output too.
"""

import bisect
import datetime
import json
import math
import numbers
import re
import string
import time
import types
import unicodedata
from collections.abc import Mapping

__all__ = ["ChatTemplate", "TemplateError", "Undefined", "FILTERS", "TESTS"]

_MISSING = object()


class TemplateError(ValueError):
    """A template that cannot be parsed or rendered; ``message`` is the reason, ``line`` and
    ``column`` (1-based) where in the template, when known."""

    def __init__(self, message, line=None, column=None):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self._offset = None  # set at render time, turned into line/column at the top

    def __str__(self):
        if self.line is None:
            return self.message
        return f"line {self.line}, column {self.column}: {self.message}"


# -- values --------------------------------------------------------------------------------


class Undefined:
    """A name, attribute or item that does not exist (Jinja2's default Undefined): prints
    as "", is false, equal only to another undefined, iterates as empty and has length 0;
    arithmetic, ordering, attribute access, indexing and calls raise TemplateError."""

    __slots__ = ("_hint",)

    def __init__(self, hint=None):
        self._hint = hint

    def _fail(self, *args, **kwargs):
        raise TemplateError(self._hint or "undefined value")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _fail
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = _fail
    __mod__ = __rmod__ = __pow__ = __rpow__ = __neg__ = __pos__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = _fail
    __int__ = __float__ = __call__ = _fail
    # Present (and failing) so that `is sequence` and reversed() see what Jinja2's sees.
    __getitem__ = _fail

    def __str__(self):
        return ""

    def __repr__(self):
        return "Undefined"

    def __bool__(self):
        return False

    def __iter__(self):
        return iter(())

    def __len__(self):
        return 0

    def __eq__(self, other):
        return type(self) is type(other)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return id(type(self))


class Namespace:
    """namespace(...): the one kind of object a template may change (``set ns.a = v``),
    which is how a value gets out of a for loop's scope."""

    __slots__ = ("attrs",)

    def __init__(self, attrs):
        self.attrs = attrs

    def __repr__(self):
        return f"<Namespace {self.attrs!r}>"


class _Loop:
    """The ``loop`` object of a for loop."""

    __slots__ = ("_items", "index0", "_last_changed")
    _FIELDS = ("index", "index0", "revindex", "revindex0", "first", "last", "length",
               "previtem", "nextitem", "depth", "depth0", "cycle", "changed")

    def __init__(self, items):
        self._items = items
        self.index0 = 0
        self._last_changed = _MISSING

    def field(self, name):
        i, n = self.index0, len(self._items)
        if name == "index":
            return i + 1
        if name == "index0":
            return i
        if name == "revindex":
            return n - i
        if name == "revindex0":
            return n - i - 1
        if name == "first":
            return i == 0
        if name == "last":
            return i == n - 1
        if name == "length":
            return n
        if name == "previtem":
            return self._items[i - 1] if i > 0 else Undefined("there is no previous item")
        if name == "nextitem":
            return self._items[i + 1] if i + 1 < n else Undefined("there is no next item")
        if name == "depth":
            return 1
        if name == "depth0":
            return 0
        if name == "cycle":
            return _Builtin("loop.cycle", self._cycle)
        if name == "changed":
            return _Builtin("loop.changed", self._changed)
        return _MISSING

    def _cycle(self, state, *args):
        if not args:
            raise TemplateError("loop.cycle() needs at least one argument")
        return args[self.index0 % len(args)]

    def _changed(self, state, *value):
        if value != self._last_changed:
            self._last_changed = value
            return True
        return False

    def __repr__(self):
        return f"<LoopContext {self.index0 + 1}/{len(self._items)}>"


class _Builtin:
    """A callable a template may call: a global, a loop method, an allowed method bound to
    its value. ``fn(state, *args, **kwargs)``."""

    __slots__ = ("name", "fn")

    def __init__(self, name, fn):
        self.name, self.fn = name, fn

    def __repr__(self):
        return f"<built-in {self.name}>"


class _Refused:
    """A method of a value that templates may not call (one that would change the value, or
    any method of an object that is not plain data)."""

    __slots__ = ("owner", "name")

    def __init__(self, owner, name):
        self.owner, self.name = owner, name

    def __repr__(self):
        return f"<method {self.name} of {self.owner} (not available)>"


class Macro:
    """A ``{% macro %}`` (or a call block's ``caller``) bound to the scope it was defined
    in: its body sees its arguments, then that scope as it is at call time."""

    __slots__ = ("node", "scope")

    def __init__(self, node, scope):
        self.node, self.scope = node, scope

    @property
    def name(self):
        return self.node.name

    def __repr__(self):
        return f"<Macro {self.node.name!r}>"

    def call(self, args, kwargs, state):
        node = self.node
        params = node.params
        if len(args) > len(params) and not node.uses_varargs:
            raise TemplateError(f"macro '{node.name}' takes not more than {len(params)} "
                                f"argument(s)")
        kwargs = dict(kwargs)
        scope = _Scope(self.scope)
        missing = []
        for i, (param, default) in enumerate(params):
            if i < len(args):
                if param in kwargs:
                    raise TemplateError(f"macro '{node.name}' got multiple values for "
                                        f"argument '{param}'")
                scope.vars[param] = args[i]
            elif param in kwargs:
                scope.vars[param] = kwargs.pop(param)
            else:
                scope.vars[param] = Undefined(f"parameter '{param}' was not provided")
                if default is not None:
                    missing.append((param, default))
        # Defaults are computed in order inside the macro, as Jinja2 does: a default sees
        # the parameters (not the outer names they shadow), earlier ones with defaults.
        for param, default in missing:
            scope.vars[param] = default.ev(scope)
        caller = kwargs.pop("caller", _MISSING)
        if node.uses_caller:
            scope.vars["caller"] = Undefined("no caller was given") if caller is _MISSING \
                else caller
        elif caller is not _MISSING:
            raise TemplateError(f"macro '{node.name}' takes no keyword argument 'caller'")
        if node.uses_varargs:
            scope.vars["varargs"] = tuple(args[len(params):])
        if node.uses_kwargs:
            scope.vars["kwargs"] = kwargs
        elif kwargs:
            raise TemplateError(f"macro '{node.name}' takes no keyword argument "
                                f"'{next(iter(kwargs))}'")
        state.tick()
        state.depth += 1
        if state.depth > state.max_depth:
            raise TemplateError(f"macro calls nested more than {state.max_depth} deep")
        out = []
        try:
            _render_nodes(node.body, scope, out)
        finally:
            state.depth -= 1
        return "".join(out)


class _Scope:
    """Variables of one scope (the template, a loop iteration, a macro call, a with or
    filter block) over its parent's."""

    __slots__ = ("vars", "parent", "state")

    def __init__(self, parent, variables=None, state=None):
        self.vars = {} if variables is None else variables
        self.parent = parent
        self.state = parent.state if parent is not None else state

    def lookup(self, name):
        scope = self
        while scope is not None:
            value = scope.vars.get(name, _MISSING)
            if value is not _MISSING:
                return value
            scope = scope.parent
        return Undefined(f"'{name}' is undefined")


class _State:
    """Per-render budgets."""

    __slots__ = ("max_output", "written", "max_iterations", "iterations", "max_depth",
                 "depth", "max_seconds", "deadline")

    def __init__(self, max_output, max_iterations, max_depth, max_seconds=None):
        self.max_output, self.written = max_output, 0
        self.max_iterations, self.iterations = max_iterations, 0
        self.max_depth, self.depth = max_depth, 0
        self.max_seconds = max_seconds
        self.deadline = None if max_seconds is None else time.monotonic() + max_seconds

    def tick(self):
        """One loop iteration or macro call: anything that runs long does many of these."""
        self.iterations += 1
        if self.iterations > self.max_iterations:
            raise TemplateError(f"more than {self.max_iterations} loop iterations and macro "
                                f"calls")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise TemplateError(f"the template ran for more than {self.max_seconds} s")

    def write(self, out, text):
        self.written += len(text)
        if self.written > self.max_output:
            raise TemplateError(f"the template wrote more than {self.max_output} characters")
        out.append(text)

    def size(self, n, what="result"):
        """Refuses a string or list of n items before it is built."""
        if n > self.max_output:
            raise TemplateError(f"the {what} would have {n} items (the limit is "
                                f"{self.max_output})")


def _type_name(value):
    if value is None:
        return "None"
    return type(value).__name__


def _to_str(value):
    """What ``{{ value }}`` and ``~`` print."""
    if isinstance(value, str):
        return value
    return str(value)


# -- attribute and item access -------------------------------------------------------------

# The methods templates may call, by the kind of value; all return new values and none
# changes its object (Hugging Face uses the immutable sandbox).
ALLOWED_METHODS = {
    str: frozenset((
        "capitalize", "casefold", "center", "count", "endswith", "expandtabs", "find",
        "format", "index", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit",
        "isidentifier", "islower", "isnumeric", "isprintable", "isspace", "istitle",
        "isupper", "join", "ljust", "lower", "lstrip", "partition", "removeprefix",
        "removesuffix", "replace", "rfind", "rindex", "rjust", "rpartition", "rsplit",
        "rstrip", "split", "splitlines", "startswith", "strip", "swapcase", "title", "upper",
        "zfill")),
    Mapping: frozenset(("items", "keys", "values", "get", "copy")),
    list: frozenset(("count", "index", "copy")),
    tuple: frozenset(("count", "index")),
}
# Values that are data: their non-method attributes may be read (e.g. a dataclass message);
# builtin objects (generators, views, functions) expose nothing but allowed methods.
_OPAQUE = (types.ModuleType, types.FrameType, types.CodeType, types.TracebackType, type)


def _allowed(obj):
    for kind, names in ALLOWED_METHODS.items():
        if isinstance(obj, kind):
            return names
    return ()


def _attribute(obj, name, state):
    """obj.name as an attribute (not an item): _MISSING when there is none."""
    if isinstance(obj, Namespace):
        return obj.attrs.get(name, _MISSING)
    if isinstance(obj, _Loop):
        return obj.field(name)
    if isinstance(obj, Macro):
        return obj.node.name if name == "name" else _MISSING
    if isinstance(obj, (Undefined, _Builtin, _Refused)):
        return _MISSING
    if name in _allowed(obj):
        return _bound_method(obj, name)
    value = getattr(obj, name, _MISSING)
    if value is _MISSING:
        return _MISSING
    if callable(value):
        return _Refused(_type_name(obj), name)
    if type(obj).__module__ == "builtins" or isinstance(value, _OPAQUE):
        return _MISSING
    return value


def _check_name(obj, name):
    if name.startswith("_"):
        raise TemplateError(f"access to attribute '{name}' of a {_type_name(obj)} value is "
                            f"refused (names starting with '_' are not accessible)")


def _getattr(obj, name, state):
    """``obj.name``: the attribute (method), else the item ``obj[name]``, as Jinja2 does."""
    if isinstance(obj, Undefined):
        obj._fail()
    if not name.startswith("_"):
        value = _attribute(obj, name, state)
        if value is not _MISSING:
            return value
    if not isinstance(obj, (Namespace, _Loop, Macro)):
        try:
            return obj[name]
        except (TypeError, LookupError):
            pass
    _check_name(obj, name)
    return Undefined(f"'{_type_name(obj)} object' has no attribute '{name}'")


def _getitem(obj, key, state):
    """``obj[key]``: the item, else (for a string key) the attribute, as Jinja2 does."""
    if isinstance(obj, Undefined):
        obj._fail()
    if not isinstance(obj, (Namespace, _Loop, Macro, _Builtin, _Refused)):
        try:
            return obj[key]
        except (TypeError, LookupError):
            pass
    if isinstance(key, str):
        _check_name(obj, key)
        value = _attribute(obj, key, state)
        if value is not _MISSING:
            return value
        return Undefined(f"'{_type_name(obj)} object' has no attribute '{key}'")
    return Undefined(f"{_type_name(obj)} object has no element {key!r}")


def _call(func, args, kwargs, state):
    if isinstance(func, Macro):
        return func.call(args, kwargs, state)
    if isinstance(func, _Builtin):
        return func.fn(state, *args, **kwargs)
    if isinstance(func, Undefined):
        func._fail()
    if isinstance(func, _Refused):
        raise TemplateError(f"the method '{func.name}' of a {func.owner} value cannot be "
                            f"called in a template")
    raise TemplateError(f"'{_type_name(func)}' object is not callable")


# Widths in format specifications ("%5s", "{:>10}"), checked against the output limit.
_WIDTH_RE = re.compile(r"\d+")
_PERCENT_SPEC_RE = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?[hlL]?.")


def _check_widths(spec, state):
    for digits in _WIDTH_RE.findall(spec):
        if len(digits) > 9 or int(digits) > state.max_output:
            raise TemplateError(f"the width {digits} is over the output limit")


def _percent_format(state, fmt, args):
    """``fmt % args`` with its widths checked (a width is allocated before it is used)."""
    for m in _PERCENT_SPEC_RE.finditer(fmt):
        if "*" in m.group(0)[1:]:
            raise TemplateError("'*' widths in % formatting are not supported")
        _check_widths(m.group(1) + "." + (m.group(2) or ""), state)
    return fmt % args


class _SafeFormatter(string.Formatter):
    """str.format without attribute or index access in the fields and with its widths
    checked."""

    def __init__(self, state):
        self.state = state

    def get_field(self, field_name, args, kwargs):
        if not re.fullmatch(r"\w*", field_name):
            raise TemplateError(f"format field '{field_name}': attribute and index access "
                                f"in format fields is not supported")
        return super().get_field(field_name, args, kwargs)

    def format_field(self, value, format_spec):
        _check_widths(format_spec, self.state)
        return format(value, format_spec)


def _bound_method(obj, name):
    method = getattr(obj, name)

    def call(state, *args, **kwargs):
        if name == "format":
            return _SafeFormatter(state).format(obj, *args, **kwargs)
        if name in ("center", "ljust", "rjust", "zfill") and args:
            _check_widths(str(args[0]), state)
        elif name == "expandtabs":
            tab = args[0] if args else kwargs.get("tabsize", 8)
            if isinstance(tab, int):
                state.size(len(obj) * max(tab, 1))
        elif name == "replace" and len(args) >= 2:
            _check_replace(state, obj, args[0], args[1])
        elif name == "join" and isinstance(obj, str) and args:
            items = list(args[0])
            state.size(sum(len(i) if isinstance(i, str) else 0 for i in items)
                       + len(obj) * len(items))
            return obj.join(items)
        return method(*args, **kwargs)

    return _Builtin(f"{_type_name(obj)}.{name}", call)


def _check_replace(state, s, old, new):
    if isinstance(s, str) and isinstance(old, str) and isinstance(new, str):
        n = len(s) + 1 if old == "" else s.count(old)
        state.size(len(s) + n * (len(new) - len(old)))


# -- filters -------------------------------------------------------------------------------


def _lower_if_str(value):
    return value.lower() if isinstance(value, str) else value


def _attr_parts(attribute):
    if attribute is None:
        return []
    if isinstance(attribute, int):
        return [attribute]
    return [int(p) if p.isdigit() else p for p in str(attribute).split(".")]


def _attr_getter(state, attribute, postprocess=None, default=None):
    """The item getter of filters' ``attribute=`` arguments: a dotted path of keys
    (numbers index lists), each looked up like ``value[key]``."""
    parts = _attr_parts(attribute)

    def get(item):
        for part in parts:
            item = _getitem(item, part, state)
            if default is not None and isinstance(item, Undefined):
                item = default
        return postprocess(item) if postprocess is not None else item

    return get


def _f_abs(state, value):
    return abs(value)


def _f_attr(state, obj, name):
    name = str(name)
    _check_name(obj, name)
    value = _attribute(obj, name, state) if not isinstance(obj, Undefined) else _MISSING
    return Undefined(f"no attribute '{name}'") if value is _MISSING else value


def _f_batch(state, value, linecount, fill_with=None):
    state.size(int(linecount), "batch")
    batch = []
    for item in value:
        if len(batch) == linecount:
            yield batch
            batch = []
        batch.append(item)
    if batch:
        if fill_with is not None and len(batch) < linecount:
            batch += [fill_with] * (linecount - len(batch))
        yield batch


def _f_capitalize(state, s):
    return _to_str(s).capitalize()


def _f_center(state, value, width=80):
    _check_widths(str(width), state)
    return _to_str(value).center(width)


def _f_default(state, value, default_value="", boolean=False):
    if isinstance(value, Undefined) or (boolean and not value):
        return default_value
    return value


def _f_dictsort(state, value, case_sensitive=False, by="key", reverse=False):
    if isinstance(value, Undefined):
        value._fail()
    if by not in ("key", "value"):
        raise TemplateError("dictsort: 'by' must be 'key' or 'value'")
    pos = 0 if by == "key" else 1

    def key(item):
        return item[pos] if case_sensitive else _lower_if_str(item[pos])

    return sorted(value.items(), key=key, reverse=reverse)


_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;"}


def _f_escape(state, value):
    return re.sub(r"[&<>\"']", lambda m: _ESCAPES[m.group(0)], _to_str(value))


def _f_first(state, seq):
    for item in seq:
        return item
    return Undefined("no first item, the sequence was empty")


def _f_float(state, value, default=0.0):
    if isinstance(value, Undefined):
        value._fail()
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _f_format(state, value, *args, **kwargs):
    if args and kwargs:
        raise TemplateError("format: positional and keyword arguments cannot be mixed")
    return _percent_format(state, _to_str(value), kwargs or args)


def _f_indent(state, s, width=4, first=False, blank=False):
    indent = width if isinstance(width, str) else " " * width
    state.size(len(indent), "indent")
    s = s + "\n"  # so that a trailing newline stays one, as in Jinja2
    lines = s.splitlines()
    state.size(len(s) + len(indent) * (len(lines) + 1))
    if blank:
        text = ("\n" + indent).join(lines)
    else:
        text = lines.pop(0)
        if lines:
            text += "\n" + "\n".join(indent + line if line else line for line in lines)
    return indent + text if first else text


def _f_int(state, value, default=0, base=10):
    if isinstance(value, Undefined):
        value._fail()
    try:
        if isinstance(value, str):
            return int(value, base)
        return int(value)
    except (TypeError, ValueError):
        try:  # "3.7" -> 3, as Jinja2 does
            return int(float(value))
        except (TypeError, ValueError, OverflowError):
            return default


def _f_items(state, value):
    if isinstance(value, Undefined):
        return
    if not isinstance(value, Mapping):
        raise TemplateError("items: can only get item pairs from a mapping")
    yield from value.items()


def _f_join(state, value, d="", attribute=None):
    if attribute is not None:
        value = map(_attr_getter(state, attribute), value)
    parts = [_to_str(v) for v in value]
    sep = _to_str(d)
    state.size(sum(map(len, parts)) + len(sep) * len(parts))
    return sep.join(parts)


def _f_last(state, seq):
    for item in reversed(seq):
        return item
    return Undefined("no last item, the sequence was empty")


def _f_length(state, value):
    return len(value)


def _f_list(state, value):
    return list(value)


def _f_lower(state, s):
    return _to_str(s).lower()


def _f_map(state, value, *args, **kwargs):
    if not args and "attribute" in kwargs:
        attribute = kwargs.pop("attribute")
        default = kwargs.pop("default", None)
        if kwargs:
            raise TemplateError(f"map: unexpected keyword argument '{next(iter(kwargs))}'")
        func = _attr_getter(state, attribute, default=default)
    else:
        if not args:
            raise TemplateError("map: needs a filter name or attribute=")
        name, args = args[0], args[1:]
        flt = FILTERS.get(name)
        if flt is None:
            raise TemplateError(f"no filter named '{name}'")

        def func(item):
            return flt(state, item, *args, **kwargs)

    if value:
        for item in value:
            yield func(item)


def _min_max(state, value, case_sensitive, attribute, pick):
    items = list(value)
    if not items:
        return Undefined("no aggregated item, the sequence was empty")
    key = _attr_getter(state, attribute, None if case_sensitive else _lower_if_str)
    return pick(items, key=key)


def _f_max(state, value, case_sensitive=False, attribute=None):
    return _min_max(state, value, case_sensitive, attribute, max)


def _f_min(state, value, case_sensitive=False, attribute=None):
    return _min_max(state, value, case_sensitive, attribute, min)


def _select(state, value, args, kwargs, keep, by_attribute):
    """select/reject/selectattr/rejectattr."""
    if by_attribute:
        if not args:
            raise TemplateError("selectattr/rejectattr need an attribute name")
        get = _attr_getter(state, args[0])
        args = args[1:]
    else:
        def get(item):
            return item
    if args:
        name, args = args[0], args[1:]
        test = TESTS.get(name)
        if test is None:
            raise TemplateError(f"no test named '{name}'")

        def check(item):
            return test(item, *args, **kwargs)
    else:
        check = bool
    if value:
        for item in value:
            if bool(check(get(item))) == keep:
                yield item


def _f_select(state, value, *args, **kwargs):
    return _select(state, value, args, kwargs, True, False)


def _f_reject(state, value, *args, **kwargs):
    return _select(state, value, args, kwargs, False, False)


def _f_selectattr(state, value, *args, **kwargs):
    return _select(state, value, args, kwargs, True, True)


def _f_rejectattr(state, value, *args, **kwargs):
    return _select(state, value, args, kwargs, False, True)


def _f_replace(state, s, old, new, count=None):
    s, old, new = _to_str(s), _to_str(old), _to_str(new)
    _check_replace(state, s, old, new)
    return s.replace(old, new, -1 if count is None else count)


def _f_reverse(state, value):
    if isinstance(value, str):
        return value[::-1]
    try:
        return reversed(value)
    except TypeError:
        items = list(value)
        items.reverse()
        return items


def _f_round(state, value, precision=0, method="common"):
    if method == "common":
        return round(value, precision)
    if method not in ("ceil", "floor"):
        raise TemplateError("round: method must be 'common', 'ceil' or 'floor'")
    if abs(precision) > 400:  # 10 ** precision would overflow a float anyway
        raise TemplateError(f"round: precision {precision} is out of range")
    scale = 10 ** precision
    return getattr(math, method)(value * scale) / scale


def _f_safe(state, value):
    return _to_str(value)


def _f_sort(state, value, reverse=False, case_sensitive=False, attribute=None):
    post = None if case_sensitive else _lower_if_str
    if attribute is None:
        getters = [_attr_getter(state, None, post)]
    else:
        getters = [_attr_getter(state, a, post) for a in str(attribute).split(",")]
    return sorted(value, key=lambda item: [g(item) for g in getters], reverse=reverse)


def _f_string(state, value):
    return _to_str(value)


def _f_sum(state, iterable, attribute=None, start=0):
    if attribute is not None:
        iterable = map(_attr_getter(state, attribute), iterable)
    return sum(iterable, start)


_TITLE_SPLIT_RE = re.compile(r"([-\s({\[<]+)")


def _f_title(state, s):
    # Not str.title: Jinja2 capitalizes after spaces, dashes and opening brackets only
    # ("o'neil" stays "O'neil").
    return "".join(part[0].upper() + part[1:].lower()
                   for part in _TITLE_SPLIT_RE.split(_to_str(s)) if part)


def _f_tojson(state, value, ensure_ascii=False, indent=None, separators=None,
              sort_keys=False):
    # Hugging Face's tojson: plain json.dumps (no HTML escaping), non-ASCII kept.
    if isinstance(indent, int) and not isinstance(indent, bool):
        state.size(indent, "indent")
    elif isinstance(indent, str):
        state.size(len(indent), "indent")
    try:
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent,
                          separators=separators, sort_keys=sort_keys)
    except RecursionError:
        raise TemplateError("tojson: the value is nested too deeply") from None


def _f_trim(state, value, chars=None):
    return _to_str(value).strip(chars)


def _f_truncate(state, s, length=255, killwords=False, end="...", leeway=None):
    leeway = 5 if leeway is None else leeway
    if length < len(end) or leeway < 0:
        raise TemplateError("truncate: the length is shorter than the end marker, or the "
                            "leeway is negative")
    if len(s) <= length + leeway:
        return s
    if killwords:
        return s[:length - len(end)] + end
    return s[:length - len(end)].rsplit(" ", 1)[0] + end


def _f_unique(state, value, case_sensitive=False, attribute=None):
    get = _attr_getter(state, attribute, None if case_sensitive else _lower_if_str)
    seen = set()
    for item in value:
        key = get(item)
        if key not in seen:
            seen.add(key)
            yield item


def _f_upper(state, s):
    return _to_str(s).upper()


def _f_wordcount(state, s):
    return len(re.findall(r"\w+", _to_str(s)))


# name -> fn(state, value, *args, **kwargs); the semantics (and the laziness: select, map,
# unique, items and batch give one-pass iterators, reverse an iterator) are Jinja2's.
FILTERS = {
    "abs": _f_abs, "attr": _f_attr, "batch": _f_batch, "capitalize": _f_capitalize,
    "center": _f_center, "count": _f_length, "d": _f_default, "default": _f_default,
    "dictsort": _f_dictsort, "e": _f_escape, "escape": _f_escape, "first": _f_first,
    "float": _f_float, "format": _f_format, "indent": _f_indent, "int": _f_int,
    "items": _f_items, "join": _f_join, "last": _f_last, "length": _f_length,
    "list": _f_list, "lower": _f_lower, "map": _f_map, "max": _f_max, "min": _f_min,
    "reject": _f_reject, "rejectattr": _f_rejectattr, "replace": _f_replace,
    "reverse": _f_reverse, "round": _f_round, "safe": _f_safe, "select": _f_select,
    "selectattr": _f_selectattr, "sort": _f_sort, "string": _f_string, "sum": _f_sum,
    "title": _f_title, "tojson": _f_tojson, "trim": _f_trim, "truncate": _f_truncate,
    "unique": _f_unique, "upper": _f_upper, "wordcount": _f_wordcount,
}


# -- tests ---------------------------------------------------------------------------------


def _t_sequence(value):
    try:
        len(value)
        value.__getitem__  # noqa: B018 - the check is that it exists
    except Exception:
        return False
    return True


def _t_iterable(value):
    try:
        iter(value)
    except TypeError:
        return False
    return True


# name -> fn(value, *args); Jinja2's builtin tests.
TESTS = {
    "defined": lambda v: not isinstance(v, Undefined),
    "undefined": lambda v: isinstance(v, Undefined),
    "none": lambda v: v is None,
    "boolean": lambda v: v is True or v is False,
    "true": lambda v: v is True,
    "false": lambda v: v is False,
    "integer": lambda v: isinstance(v, int) and v is not True and v is not False,
    "float": lambda v: isinstance(v, float),
    "number": lambda v: isinstance(v, numbers.Number),
    "string": lambda v: isinstance(v, str),
    "mapping": lambda v: isinstance(v, Mapping),
    "sequence": _t_sequence,
    "iterable": _t_iterable,
    "callable": lambda v: isinstance(v, (Macro, _Builtin, Undefined)),
    "odd": lambda v: v % 2 == 1,
    "even": lambda v: v % 2 == 0,
    "divisibleby": lambda v, n: v % n == 0,
    "lower": lambda v: _to_str(v).islower(),
    "upper": lambda v: _to_str(v).isupper(),
    "in": lambda v, seq: v in seq,
    "sameas": lambda v, other: v is other,
    "escaped": lambda v: hasattr(v, "__html__"),
    "filter": lambda v: v in FILTERS,
    "test": lambda v: v in TESTS,
}
for _names, _fn in (
        (("eq", "equalto", "=="), lambda a, b: a == b),
        (("ne", "!="), lambda a, b: a != b),
        (("lt", "lessthan", "<"), lambda a, b: a < b),
        (("le", "<="), lambda a, b: a <= b),
        (("gt", "greaterthan", ">"), lambda a, b: a > b),
        (("ge", ">="), lambda a, b: a >= b)):
    for _name in _names:
        TESTS[_name] = _fn


# -- globals -------------------------------------------------------------------------------

_MAX_RANGE = 100000  # Jinja2's sandbox refuses longer ranges too


def _g_range(state, *args):
    r = range(*args)
    if len(r) > _MAX_RANGE:
        raise TemplateError(f"range() of {len(r)} items (the limit is {_MAX_RANGE})")
    return r


def _g_dict(state, *args, **kwargs):
    return dict(*args, **kwargs)


def _g_namespace(state, *args, **kwargs):
    return Namespace(dict(*args, **kwargs))


def _g_raise_exception(state, message):
    raise TemplateError(_to_str(message))


def _g_strftime_now(state, fmt):
    return datetime.datetime.now().strftime(fmt)


GLOBALS = {name: _Builtin(name, fn) for name, fn in (
    ("range", _g_range), ("dict", _g_dict), ("namespace", _g_namespace),
    ("raise_exception", _g_raise_exception), ("strftime_now", _g_strftime_now))}


# -- lexer ---------------------------------------------------------------------------------

_TAG_START_RE = re.compile(r"\{([{%#])([-+]?)")
_RAW_BEGIN_RE = re.compile(r"\s*raw\s*(-%\}\s*|%\})")
_RAW_END_RE = re.compile(r"\{%([-+]?)\s*endraw\s*(\+%\}|-%\}\s*|%\}\n?)")
_SPACE_RE = re.compile(r"\s+")
_SPACES_RE = re.compile(r"\s*")
_NEWLINE_RE = re.compile(r"\r\n|\r")
_FLOAT_RE = re.compile(r"(?:0|[1-9](?:_?\d)*)(?:\.\d(?:_?\d)*(?:[eE][+-]?\d(?:_?\d)*)?"
                       r"|[eE][+-]?\d(?:_?\d)*)")
_INT_RE = re.compile(r"0[bB](?:_?[01])+|0[oO](?:_?[0-7])+|0[xX](?:_?[\da-fA-F])+"
                     r"|[1-9](?:_?\d)*|0(?:_?0)*")
_NAME_RE = re.compile(r"[^\W\d]\w*")
_STRING_RE = re.compile(r"'([^'\\]*(?:\\.[^'\\]*)*)'|\"([^\"\\]*(?:\\.[^\"\\]*)*)\"", re.S)
_OPERATORS = ("//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]",
              "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";")
_OPEN, _CLOSE = "([{", ")]}"

_SIMPLE_ESCAPES = {"\n": "", "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b",
                   "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


def _unescape(body):
    """A string literal's escapes, as Jinja2 reads them (Python's unicode-escape codec
    applied to the ASCII form of the text): \\n \\t \\xhh \\uXXXX \\N{NAME} octal...;
    unknown escapes stay as written."""
    if "\\" not in body:
        return body
    out, i, n = [], 0, len(body)
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 == n:
            out.append(c)
            i += 1
            continue
        e = body[i + 1]
        i += 2
        if e in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[e])
        elif e in _HEX_ESCAPES:
            digits = body[i:i + _HEX_ESCAPES[e]]
            if len(digits) < _HEX_ESCAPES[e] or not all(d in string.hexdigits for d in digits):
                raise ValueError(f"truncated \\{e} escape")
            code = int(digits, 16)
            if code > 0x10FFFF:
                raise ValueError("illegal Unicode character")
            out.append(chr(code))
            i += len(digits)
        elif e in "01234567":
            j = i
            while j < n and j < i + 2 and body[j] in "01234567":
                j += 1
            out.append(chr(int(e + body[i:j], 8)))
            i = j
        elif e == "N":
            end = body.find("}", i)
            if not body.startswith("{", i) or end < 0:
                raise ValueError("malformed \\N character escape")
            try:
                out.append(unicodedata.lookup(body[i + 1:end]))
            except KeyError:
                raise ValueError("unknown Unicode character name") from None
            i = end + 1
        elif ord(e) > 127:
            # The codec sees the character's own escape after a literal backslash.
            code = ord(e)
            out.append("\\" + (f"x{code:02x}" if code < 0x100 else f"u{code:04x}"
                               if code < 0x10000 else f"U{code:08x}"))
        else:
            out.append("\\" + e)
    return "".join(out)


class _Tok:
    __slots__ = ("kind", "value", "pos")

    def __init__(self, kind, value, pos):
        self.kind, self.value, self.pos = kind, value, pos

    def describe(self):
        if self.kind == "eof":
            return "end of template"
        if self.kind == "string":
            return "string literal"
        if self.kind in ("var_end", "block_end", "var_begin", "block_begin"):
            return repr(self.value)
        return repr(str(self.value))


class _Lexer:
    """Splits a template into data (text, with the whitespace control applied) and the
    tokens of its tags, the way Jinja2's lexer does with trim_blocks and lstrip_blocks."""

    def __init__(self, source, locate):
        self.src = source
        self.locate = locate

    def error(self, message, pos):
        line, col = self.locate(pos)
        return TemplateError(message, line, col)

    def tokens(self):
        src, n, pos = self.src, len(self.src), 0
        toks = []
        while pos < n:
            m = _TAG_START_RE.search(src, pos)
            if m is None:
                toks.append(_Tok("data", src[pos:], pos))
                break
            text = src[pos:m.start()]
            kind, sign = m.group(1), m.group(2)
            raw = _RAW_BEGIN_RE.match(src, m.end()) if kind == "%" else None
            text = self._strip_before(text, sign, kind != "{", pos)
            if text:
                toks.append(_Tok("data", text, pos))
            if raw:
                pos = self._raw(raw.end(), toks)
            elif kind == "#":
                pos = self._comment(m, m.end())
            else:
                pos = self._tag(m, toks)
        toks.append(_Tok("eof", None, n))
        return toks

    def _strip_before(self, text, sign, is_block, start):
        """The text before a tag: all trailing whitespace goes for '-'; with lstrip_blocks
        the spaces and tabs from the start of the line go before a block or comment tag
        that is the first thing on its line, unless the tag starts with '+'."""
        if sign == "-":
            return text.rstrip()
        if sign == "+" or not is_block:
            return text
        line_start = text.rfind("\n") + 1
        # A line starts where the previous tag consumed a newline (trim_blocks), or at the
        # start of the template.
        starts_line = line_start > 0 or start == 0 or self.src[start - 1] == "\n"
        if starts_line and _SPACE_RE.fullmatch(text, line_start):
            return text[:line_start]
        return text

    def _after_end(self, pos, sign):
        """Past a tag's end marker: '-' eats all following whitespace; plain (trim_blocks)
        eats one newline; '+' keeps it."""
        if sign == "-":
            return _SPACES_RE.match(self.src, pos).end()
        if sign == "" and self.src.startswith("\n", pos):
            return pos + 1
        return pos

    def _comment(self, m, body):
        end = self.src.find("#}", body)
        if end < 0:
            raise self.error("the comment is not closed (expected '#}')", m.start())
        sign = self.src[end - 1] if end > body and self.src[end - 1] in "+-" else ""
        return self._after_end(end + 2, sign)

    def _raw(self, body, toks):
        m = _RAW_END_RE.search(self.src, body)
        if m is None:
            raise self.error("the raw block is not closed (expected '{% endraw %}')", body)
        text = self._strip_before(self.src[body:m.start()], m.group(1), True, body)
        if text:
            toks.append(_Tok("data", text, body))
        return m.end()

    def _tag(self, m, toks):
        src, n = self.src, len(self.src)
        block = m.group(1) == "%"
        begin, end = ("block_begin", "block_end") if block else ("var_begin", "var_end")
        close = "%}" if block else "}}"
        toks.append(_Tok(begin, "{" + m.group(1), m.start()))
        pos = m.end()
        brackets = []
        while True:
            pos = _SPACES_RE.match(src, pos).end()
            if pos >= n:
                what = "statement" if block else "print statement"
                raise self.error(f"unexpected end of template: the {what} is not closed "
                                 f"(expected '{close}')", m.start())
            if not brackets:  # end markers count only outside brackets, as in Jinja2
                if src.startswith("-" + close, pos):
                    toks.append(_Tok(end, close, pos))
                    return self._after_end(pos + 3, "-")
                if block and src.startswith("+" + close, pos):
                    toks.append(_Tok(end, close, pos))
                    return pos + 3
                if src.startswith(close, pos):
                    toks.append(_Tok(end, close, pos))
                    return self._after_end(pos + 2, "" if block else "+")
            pos = self._expr_token(pos, toks, brackets)

    def _expr_token(self, pos, toks, brackets):
        src = self.src
        if src[pos].isdigit():
            m = _FLOAT_RE.match(src, pos)
            if m and (m.group(0).count(".") or "e" in m.group(0).lower()) and \
                    not (pos > 0 and src[pos - 1] == "."):
                toks.append(_Tok("float", float(m.group(0).replace("_", "")), pos))
                return m.end()
            m = _INT_RE.match(src, pos)
            if m:
                toks.append(_Tok("int", int(m.group(0).replace("_", ""), 0), pos))
                return m.end()
        m = _NAME_RE.match(src, pos)
        if m:
            toks.append(_Tok("name", m.group(0), pos))
            return m.end()
        m = _STRING_RE.match(src, pos)
        if m:
            body = m.group(1) if m.group(1) is not None else m.group(2)
            try:
                toks.append(_Tok("string", _unescape(body), pos))
            except ValueError as e:
                raise self.error(f"bad string literal: {e}", pos) from None
            return m.end()
        for op in _OPERATORS:
            if src.startswith(op, pos):
                if op in _OPEN:
                    brackets.append(op)
                elif op in _CLOSE:
                    if not brackets:
                        raise self.error(f"unexpected '{op}'", pos)
                    want = _CLOSE[_OPEN.index(brackets.pop())]
                    if op != want:
                        raise self.error(f"unexpected '{op}', expected '{want}'", pos)
                toks.append(_Tok("op", op, pos))
                return pos + len(op)
        if src[pos] in "'\"":
            raise self.error("the string literal is not closed", pos)
        raise self.error(f"unexpected character {src[pos]!r}", pos)


# -- expression nodes ----------------------------------------------------------------------


class _Node:
    __slots__ = ("pos",)
    children = ()

    def walk(self):
        """This node and all below it (the macro parser looks for varargs/kwargs/caller)."""
        yield self
        for name in self.children:
            child = getattr(self, name)
            for item in child if isinstance(child, (list, tuple)) else (child,):
                if isinstance(item, tuple):  # (name, node) pairs and (test, body) pairs
                    for sub in item:
                        if isinstance(sub, _Node):
                            yield from sub.walk()
                        elif isinstance(sub, list):
                            for s in sub:
                                yield from s.walk()
                elif isinstance(item, _Node):
                    yield from item.walk()


class _Const(_Node):
    __slots__ = ("value",)

    def __init__(self, pos, value):
        self.pos, self.value = pos, value

    def ev(self, scope):
        return self.value


class _Name(_Node):
    __slots__ = ("name",)

    def __init__(self, pos, name):
        self.pos, self.name = pos, name

    def ev(self, scope):
        return scope.lookup(self.name)


class _Seq(_Node):
    __slots__ = ("items", "kind")
    children = ("items",)

    def __init__(self, pos, items, kind):
        self.pos, self.items, self.kind = pos, items, kind

    def ev(self, scope):
        return self.kind(item.ev(scope) for item in self.items)


class _Dict(_Node):
    __slots__ = ("pairs",)
    children = ("pairs",)

    def __init__(self, pos, pairs):
        self.pos, self.pairs = pos, pairs

    def ev(self, scope):
        return {k.ev(scope): v.ev(scope) for k, v in self.pairs}


class _GetAttr(_Node):
    __slots__ = ("obj", "name")
    children = ("obj",)

    def __init__(self, pos, obj, name):
        self.pos, self.obj, self.name = pos, obj, name

    def ev(self, scope):
        return _getattr(self.obj.ev(scope), self.name, scope.state)


class _Slice(_Node):
    __slots__ = ("start", "stop", "step")
    children = ("start", "stop", "step")

    def __init__(self, pos, start, stop, step):
        self.pos, self.start, self.stop, self.step = pos, start, stop, step

    def ev(self, scope):
        return slice(*(None if n is None else n.ev(scope)
                       for n in (self.start, self.stop, self.step)))


class _GetItem(_Node):
    __slots__ = ("obj", "key")
    children = ("obj", "key")

    def __init__(self, pos, obj, key):
        self.pos, self.obj, self.key = pos, obj, key

    def ev(self, scope):
        return _getitem(self.obj.ev(scope), self.key.ev(scope), scope.state)


def _eval_args(scope, args, kwargs, star, dstar):
    values = [a.ev(scope) for a in args]
    if star is not None:
        values.extend(star.ev(scope))
    named = {k: v.ev(scope) for k, v in kwargs}
    if dstar is not None:
        extra = dstar.ev(scope)
        if not isinstance(extra, Mapping):
            raise TemplateError("the ** argument is not a mapping")
        named.update(extra)
    return values, named


class _Call(_Node):
    __slots__ = ("func", "args", "kwargs", "star", "dstar")
    children = ("func", "args", "kwargs", "star", "dstar")

    def __init__(self, pos, func, args, kwargs, star, dstar):
        self.pos, self.func, self.args, self.kwargs = pos, func, args, kwargs
        self.star, self.dstar = star, dstar

    def ev(self, scope, extra_kwargs=None):
        func = self.func.ev(scope)
        args, kwargs = _eval_args(scope, self.args, self.kwargs, self.star, self.dstar)
        if extra_kwargs:
            kwargs.update(extra_kwargs)
        return _call(func, args, kwargs, scope.state)


class _Filter(_Node):
    __slots__ = ("node", "name", "fn", "args", "kwargs", "star", "dstar")
    children = ("node", "args", "kwargs", "star", "dstar")

    def __init__(self, pos, node, name, fn, call):
        self.pos, self.node, self.name, self.fn = pos, node, name, fn
        self.args, self.kwargs, self.star, self.dstar = call

    def ev(self, scope, value=_MISSING):
        if value is _MISSING:
            value = self.node.ev(scope)
        args, kwargs = _eval_args(scope, self.args, self.kwargs, self.star, self.dstar)
        return self.fn(scope.state, value, *args, **kwargs)


class _Test(_Node):
    __slots__ = ("node", "name", "fn", "args", "kwargs", "star", "dstar")
    children = ("node", "args", "kwargs", "star", "dstar")

    def __init__(self, pos, node, name, fn, call):
        self.pos, self.node, self.name, self.fn = pos, node, name, fn
        self.args, self.kwargs, self.star, self.dstar = call

    def ev(self, scope):
        value = self.node.ev(scope)
        args, kwargs = _eval_args(scope, self.args, self.kwargs, self.star, self.dstar)
        return bool(self.fn(value, *args, **kwargs))


def _sized(value, state):
    if isinstance(value, (str, list, tuple)):
        state.size(len(value))
    return value


def _mul(state, a, b):
    for seq, n in ((a, b), (b, a)):
        if isinstance(seq, (str, list, tuple)) and isinstance(n, int):
            state.size(len(seq) * max(n, 0))
    return a * b


def _pow(state, a, b):
    if isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1:
        if a.bit_length() * b > 1 << 20:
            raise TemplateError(f"{a} ** {b} is too large")
    return a ** b


def _add(state, a, b):
    if isinstance(a, (str, list, tuple)) and isinstance(b, (str, list, tuple)):
        state.size(len(a) + len(b))
    return a + b


_BINOPS = {
    "+": _add,
    "-": lambda state, a, b: a - b,
    "*": _mul,
    "/": lambda state, a, b: a / b,
    "//": lambda state, a, b: a // b,
    "%": lambda state, a, b: _percent_format(state, a, b) if isinstance(a, str) else a % b,
    "**": _pow,
}


class _BinOp(_Node):
    __slots__ = ("op", "left", "right", "fn")
    children = ("left", "right")

    def __init__(self, pos, op, left, right):
        self.pos, self.op, self.left, self.right = pos, op, left, right
        self.fn = _BINOPS[op]

    def ev(self, scope):
        return self.fn(scope.state, self.left.ev(scope), self.right.ev(scope))


class _Concat(_Node):
    __slots__ = ("parts",)
    children = ("parts",)

    def __init__(self, pos, parts):
        self.pos, self.parts = pos, parts

    def ev(self, scope):
        parts = [_to_str(p.ev(scope)) for p in self.parts]
        scope.state.size(sum(map(len, parts)))
        return "".join(parts)


_COMPARE = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "in": lambda a, b: a in b, "not in": lambda a, b: a not in b,
}


class _Compare(_Node):
    __slots__ = ("first", "ops")
    children = ("first", "ops")

    def __init__(self, pos, first, ops):
        self.pos, self.first, self.ops = pos, first, ops

    def ev(self, scope):
        # Chained like Python: a < b < c is a < b and b < c, stopping at the first false.
        left = self.first.ev(scope)
        result = True
        for op, node in self.ops:
            right = node.ev(scope)
            result = _COMPARE[op](left, right)
            if not result:
                return result
            left = right
        return result


class _And(_Node):
    __slots__ = ("left", "right")
    children = ("left", "right")

    def __init__(self, pos, left, right):
        self.pos, self.left, self.right = pos, left, right

    def ev(self, scope):
        return self.left.ev(scope) and self.right.ev(scope)


class _Or(_And):
    __slots__ = ()

    def ev(self, scope):
        return self.left.ev(scope) or self.right.ev(scope)


class _Not(_Node):
    __slots__ = ("node",)
    children = ("node",)

    def __init__(self, pos, node):
        self.pos, self.node = pos, node

    def ev(self, scope):
        return not self.node.ev(scope)


class _Neg(_Not):
    __slots__ = ()

    def ev(self, scope):
        return -self.node.ev(scope)


class _Pos(_Not):
    __slots__ = ()

    def ev(self, scope):
        return +self.node.ev(scope)


class _CondExpr(_Node):
    __slots__ = ("test", "then", "otherwise")
    children = ("test", "then", "otherwise")

    def __init__(self, pos, test, then, otherwise):
        self.pos, self.test, self.then, self.otherwise = pos, test, then, otherwise

    def ev(self, scope):
        if self.test.ev(scope):
            return self.then.ev(scope)
        if self.otherwise is None:  # `a if b` without else: undefined when b is false
            return Undefined("the inline if's condition was false and it has no else")
        return self.otherwise.ev(scope)


class _NSRef(_Node):
    """The target ``ns.attr`` of a set."""

    __slots__ = ("name", "attr")

    def __init__(self, pos, name, attr):
        self.pos, self.name, self.attr = pos, name, attr


# -- statement nodes -----------------------------------------------------------------------


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


def _render_nodes(nodes, scope, out):
    for node in nodes:
        try:
            node.render(scope, out)
        except TemplateError as e:
            if e._offset is None and e.line is None:
                e._offset = node.pos
            raise
        except (TypeError, ValueError, ArithmeticError, LookupError, AttributeError) as e:
            err = TemplateError(f"{type(e).__name__}: {e}")
            err._offset = node.pos
            raise err from e


def _assign(scope, target, value):
    if isinstance(target, _Name):
        scope.vars[target.name] = value
    elif isinstance(target, _NSRef):
        ns = scope.lookup(target.name)
        if not isinstance(ns, Namespace):
            raise TemplateError("cannot assign an attribute of a value that is not a "
                                "namespace()")
        ns.attrs[target.attr] = value
    else:
        values = list(value)
        if len(values) != len(target.items):
            raise TemplateError(f"cannot unpack {len(values)} values into "
                                f"{len(target.items)} names")
        for t, v in zip(target.items, values):
            _assign(scope, t, v)


class _Data(_Node):
    __slots__ = ("text",)

    def __init__(self, pos, text):
        self.pos, self.text = pos, text

    def render(self, scope, out):
        scope.state.write(out, self.text)


class _Output(_Node):
    __slots__ = ("expr",)
    children = ("expr",)

    def __init__(self, pos, expr):
        self.pos, self.expr = pos, expr

    def render(self, scope, out):
        scope.state.write(out, _to_str(self.expr.ev(scope)))


class _If(_Node):
    __slots__ = ("branches", "otherwise")
    children = ("branches", "otherwise")

    def __init__(self, pos, branches, otherwise):
        self.pos, self.branches, self.otherwise = pos, branches, otherwise

    def render(self, scope, out):
        for test, body in self.branches:
            if test.ev(scope):
                _render_nodes(body, scope, out)
                return
        _render_nodes(self.otherwise, scope, out)


class _For(_Node):
    __slots__ = ("target", "iter", "test", "body", "otherwise")
    children = ("target", "iter", "test", "body", "otherwise")

    def __init__(self, pos, target, iterable, test, body, otherwise):
        self.pos, self.target, self.iter, self.test = pos, target, iterable, test
        self.body, self.otherwise = body, otherwise

    def render(self, scope, out):
        state = scope.state
        items = list(self.iter.ev(scope))
        if self.test is not None:
            kept = []
            for item in items:
                inner = _Scope(scope)
                _assign(inner, self.target, item)
                if self.test.ev(inner):
                    kept.append(item)
            items = kept
        if not items:
            _render_nodes(self.otherwise, _Scope(scope), out)
            return
        loop = _Loop(items)
        for i, item in enumerate(items):
            state.tick()
            loop.index0 = i
            # A fresh scope per iteration: what the body sets does not carry over to the
            # next iteration or out of the loop (Jinja2's scoping).
            inner = _Scope(scope)
            _assign(inner, self.target, item)
            inner.vars["loop"] = loop
            try:
                _render_nodes(self.body, inner, out)
            except _Break:
                break
            except _Continue:
                continue


class _Set(_Node):
    __slots__ = ("target", "expr")
    children = ("target", "expr")

    def __init__(self, pos, target, expr):
        self.pos, self.target, self.expr = pos, target, expr

    def render(self, scope, out):
        _assign(scope, self.target, self.expr.ev(scope))


def _apply_filters(filters, scope, value):
    for f in filters:
        value = f.ev(scope, value)
    return value


class _SetBlock(_Node):
    __slots__ = ("target", "filters", "body")
    children = ("target", "filters", "body")

    def __init__(self, pos, target, filters, body):
        self.pos, self.target, self.filters, self.body = pos, target, filters, body

    def render(self, scope, out):
        buf = []
        _render_nodes(self.body, _Scope(scope), buf)
        _assign(scope, self.target, _apply_filters(self.filters, scope, "".join(buf)))


class _MacroDef(_Node):
    __slots__ = ("name", "params", "body", "uses_varargs", "uses_kwargs", "uses_caller")
    children = ("body",)

    def __init__(self, pos, name, params, body):
        self.pos, self.name, self.params, self.body = pos, name, params, body
        names = {n.name for b in body for n in b.walk() if isinstance(n, _Name)}
        self.uses_varargs = "varargs" in names
        self.uses_kwargs = "kwargs" in names
        self.uses_caller = "caller" in names

    def render(self, scope, out):
        scope.vars[self.name] = Macro(self, scope)


class _CallBlock(_Node):
    __slots__ = ("call", "caller")
    children = ("call", "caller")

    def __init__(self, pos, call, caller):
        self.pos, self.call, self.caller = pos, call, caller

    def render(self, scope, out):
        value = self.call.ev(scope, {"caller": Macro(self.caller, scope)})
        scope.state.write(out, _to_str(value))


class _FilterBlock(_Node):
    __slots__ = ("filters", "body")
    children = ("filters", "body")

    def __init__(self, pos, filters, body):
        self.pos, self.filters, self.body = pos, filters, body

    def render(self, scope, out):
        buf = []
        _render_nodes(self.body, _Scope(scope), buf)
        scope.state.write(out, _to_str(_apply_filters(self.filters, scope, "".join(buf))))


class _Scoped(_Node):
    """with (its assignments evaluated outside, bound inside) and generation."""

    __slots__ = ("assignments", "body")
    children = ("assignments", "body")

    def __init__(self, pos, assignments, body):
        self.pos, self.assignments, self.body = pos, assignments, body

    def render(self, scope, out):
        values = [(t, e.ev(scope)) for t, e in self.assignments]
        inner = _Scope(scope)
        for target, value in values:
            _assign(inner, target, value)
        _render_nodes(self.body, inner, out)


class _LoopControl(_Node):
    __slots__ = ("exc",)

    def __init__(self, pos, exc):
        self.pos, self.exc = pos, exc

    def render(self, scope, out):
        raise self.exc()


# -- parser --------------------------------------------------------------------------------

_UNSUPPORTED_TAGS = ("include", "import", "from", "extends", "block", "autoescape", "do",
                     "trans", "pluralize")
_MAX_NESTING = 64  # blocks and parentheses; deeper would reach Python's recursion limit


class _Parser:
    """Recursive descent over the tokens, with Jinja2's grammar and operator precedence:
    inline if < or < and < not < comparisons < + - < ~ < * / // % < ** < unary - + <
    filters, tests, calls, attribute/item access."""

    def __init__(self, toks, locate):
        self.toks, self.i, self.locate = toks, 0, locate
        self.loops = 0  # for loops around the current point (break/continue need one)
        self.for_bodies = 0  # the same, counting through macros ('loop' cannot be set)
        self.nesting = 0

    # token helpers
    @property
    def cur(self):
        return self.toks[self.i]

    def look(self):
        return self.toks[min(self.i + 1, len(self.toks) - 1)]

    def next(self):
        tok = self.toks[self.i]
        if tok.kind != "eof":
            self.i += 1
        return tok

    def error(self, message, tok=None):
        line, col = self.locate((tok or self.cur).pos)
        return TemplateError(message, line, col)

    def is_op(self, value, tok=None):
        tok = tok or self.cur
        return tok.kind == "op" and tok.value == value

    def is_name(self, value, tok=None):
        tok = tok or self.cur
        return tok.kind == "name" and tok.value == value

    def skip_op(self, value):
        if self.is_op(value):
            self.i += 1
            return True
        return False

    def skip_name(self, value):
        if self.is_name(value):
            self.i += 1
            return True
        return False

    def expect_op(self, value):
        if not self.is_op(value):
            raise self.error(f"expected '{value}', got {self.cur.describe()}")
        return self.next()

    def expect_name(self, value=None):
        tok = self.cur
        if tok.kind != "name" or (value is not None and tok.value != value):
            want = f"'{value}'" if value else "a name"
            raise self.error(f"expected {want}, got {tok.describe()}")
        return self.next()

    def expect_block_end(self, tag):
        if self.cur.kind != "block_end":
            raise self.error(f"expected '%}}' to end the '{tag}' tag, got "
                             f"{self.cur.describe()}")
        self.next()

    # statements
    def parse(self):
        nodes, _ = self.subparse(())
        return nodes

    def subparse(self, end_tags, opener=None):
        """Nodes up to one of the end tags ``{% name``; returns (nodes, that name), the
        tag's name consumed and the rest of the tag not."""
        nodes = []
        while True:
            tok = self.cur
            if tok.kind == "data":
                nodes.append(_Data(tok.pos, tok.value))
                self.next()
            elif tok.kind == "var_begin":
                self.next()
                expr = self.parse_tuple()
                if self.cur.kind != "var_end":
                    raise self.error(f"expected '}}}}' to end the print statement, got "
                                     f"{self.cur.describe()}")
                self.next()
                nodes.append(_Output(tok.pos, expr))
            elif tok.kind == "block_begin":
                self.next()
                name = self.cur
                if name.kind != "name":
                    raise self.error(f"expected a tag name, got {name.describe()}")
                if name.value in end_tags:
                    self.next()
                    return nodes, name.value
                nodes.append(self.parse_statement(tok, end_tags, opener))
            elif tok.kind == "eof":
                if end_tags:
                    what, line, col = opener
                    raise self.error(f"unexpected end of template: the '{what}' tag at line "
                                     f"{line}, column {col} is not closed (expected "
                                     f"{_alternatives(end_tags)})")
                return nodes, None
            else:
                raise self.error(f"unexpected {tok.describe()}")

    def parse_statement(self, begin, end_tags, opener):
        tok = self.cur
        name = tok.value
        method = getattr(self, f"stmt_{name}", None)
        if method is None:
            if name in _UNSUPPORTED_TAGS:
                raise self.error(f"the '{name}' tag is not supported", tok)
            if end_tags:
                raise self.error(f"unexpected tag '{name}' (expected "
                                 f"{_alternatives(end_tags)} for the '{opener[0]}' tag at "
                                 f"line {opener[1]}, column {opener[2]})", tok)
            if name.startswith("end") or name in ("else", "elif"):
                raise self.error(f"unexpected tag '{name}': no open block takes it", tok)
            raise self.error(f"unknown tag '{name}'", tok)
        self.next()
        self.nesting += 1
        if self.nesting > _MAX_NESTING:
            raise self.error("blocks are nested too deeply", tok)
        node = method(begin.pos, (name,) + self.locate(tok.pos))
        self.nesting -= 1
        return node

    def stmt_if(self, pos, opener):
        branches = []
        test = self.parse_tuple(with_condexpr=False)
        while True:
            self.expect_block_end("if")
            body, tag = self.subparse(("elif", "else", "endif"), opener)
            branches.append((test, body))
            if tag == "elif":
                test = self.parse_tuple(with_condexpr=False)
                continue
            otherwise = []
            if tag == "else":
                self.expect_block_end("else")
                otherwise, _ = self.subparse(("endif",), opener)
            self.expect_block_end("endif")
            return _If(pos, branches, otherwise)

    def _check_not_loop(self, target, tok):
        names = [n.name for n in target.walk() if isinstance(n, _Name)]
        if "loop" in names:
            raise self.error("cannot assign to the special 'loop' variable in a for loop", tok)

    def stmt_for(self, pos, opener):
        tok = self.cur
        target = self.parse_assign_target(extra_end=("in",))
        self._check_not_loop(target, tok)
        self.expect_name("in")
        iterable = self.parse_tuple(with_condexpr=False, extra_end=("recursive",))
        test = None
        if self.skip_name("if"):
            test = self.parse_expression()
        if self.is_name("recursive"):
            raise self.error("recursive for loops are not supported")
        self.expect_block_end("for")
        self.loops += 1
        self.for_bodies += 1
        body, tag = self.subparse(("endfor", "else"), opener)
        self.loops -= 1
        self.for_bodies -= 1
        otherwise = []
        if tag == "else":
            self.expect_block_end("else")
            otherwise, _ = self.subparse(("endfor",), opener)
        self.expect_block_end("endfor")
        return _For(pos, target, iterable, test, body, otherwise)

    def stmt_set(self, pos, opener):
        tok = self.cur
        target = self.parse_assign_target(with_namespace=True)
        if self.for_bodies and not isinstance(target, _NSRef):
            self._check_not_loop(target, tok)
        if self.skip_op("="):
            expr = self.parse_tuple()
            self.expect_block_end("set")
            return _Set(pos, target, expr)
        filters = self.parse_filter_chain()
        self.expect_block_end("set")
        body, _ = self.subparse(("endset",), opener)
        self.expect_block_end("endset")
        return _SetBlock(pos, target, filters, body)

    def parse_params(self):
        params = []
        self.expect_op("(")
        while not self.is_op(")"):
            if params:
                self.expect_op(",")
                if self.is_op(")"):
                    break
            name = self.expect_name().value
            default = self.parse_expression() if self.skip_op("=") else None
            if default is None and params and params[-1][1] is not None:
                raise self.error("a parameter without a default follows one with a "
                                 "default")
            params.append((name, default))
        self.next()
        return params

    def stmt_macro(self, pos, opener):
        name = self.expect_name().value
        params = self.parse_params()
        self.expect_block_end("macro")
        loops, self.loops = self.loops, 0  # break/continue do not reach out of a macro
        body, _ = self.subparse(("endmacro",), opener)
        self.loops = loops
        self.expect_block_end("endmacro")
        return _MacroDef(pos, name, params, body)

    def stmt_call(self, pos, opener):
        params = self.parse_params() if self.is_op("(") else []
        call = self.parse_expression()
        if not isinstance(call, _Call):
            raise self.error("expected a call after 'call'")
        self.expect_block_end("call")
        loops, self.loops = self.loops, 0
        body, _ = self.subparse(("endcall",), opener)
        self.loops = loops
        self.expect_block_end("endcall")
        return _CallBlock(pos, call, _MacroDef(pos, "caller", params, body))

    def stmt_filter(self, pos, opener):
        filters = self.parse_filter_chain(start_inline=True)
        self.expect_block_end("filter")
        body, _ = self.subparse(("endfilter",), opener)
        self.expect_block_end("endfilter")
        return _FilterBlock(pos, filters, body)

    def stmt_with(self, pos, opener):
        assignments = []
        while self.cur.kind != "block_end":
            if assignments:
                self.expect_op(",")
            target = self.parse_assign_target()
            self.expect_op("=")
            assignments.append((target, self.parse_expression()))
        self.next()
        body, _ = self.subparse(("endwith",), opener)
        self.expect_block_end("endwith")
        return _Scoped(pos, assignments, body)

    def stmt_generation(self, pos, opener):
        # transformers' {% generation %} marks assistant text for its token mask; the text
        # renders as it is.
        self.expect_block_end("generation")
        body, _ = self.subparse(("endgeneration",), opener)
        self.expect_block_end("endgeneration")
        return _Scoped(pos, [], body)

    def _loop_control(self, pos, name, exc):
        if not self.loops:
            raise self.error(f"'{name}' outside a for loop", self.toks[self.i - 1])
        self.expect_block_end(name)
        return _LoopControl(pos, exc)

    def stmt_break(self, pos, opener):
        return self._loop_control(pos, "break", _Break)

    def stmt_continue(self, pos, opener):
        return self._loop_control(pos, "continue", _Continue)

    # expressions
    def parse_assign_target(self, extra_end=(), with_namespace=False):
        tok = self.cur
        if with_namespace and tok.kind == "name" and self.is_op(".", self.look()):
            self.i += 2
            return _NSRef(tok.pos, tok.value, self.expect_name().value)
        target = self.parse_tuple(simplified=True, extra_end=extra_end)
        self._check_target(target, tok)
        return target

    def _check_target(self, target, tok):
        if isinstance(target, _Seq) and target.kind is tuple:
            for item in target.items:
                self._check_target(item, tok)
        elif not isinstance(target, _Name):
            raise self.error("cannot assign to this expression (expected a name or names)",
                             tok)

    def parse_tuple(self, simplified=False, with_condexpr=True, extra_end=(),
                    explicit_parentheses=False):
        pos = self.cur.pos
        items, is_tuple = [], False
        while True:
            if items:
                self.expect_op(",")
            if self._tuple_end(extra_end):
                break
            if simplified:
                items.append(self.parse_primary())
            elif with_condexpr:
                items.append(self.parse_expression())
            else:
                items.append(self.parse_or())
            if self.is_op(","):
                is_tuple = True
            else:
                break
        if not is_tuple:
            if items:
                return items[0]
            if not explicit_parentheses:
                raise self.error(f"expected an expression, got {self.cur.describe()}")
        return _Seq(pos, items, tuple)

    def _tuple_end(self, extra_end):
        tok = self.cur
        if tok.kind in ("var_end", "block_end", "eof") or self.is_op(")"):
            return True
        return tok.kind == "name" and tok.value in extra_end

    def parse_expression(self, with_condexpr=True):
        self.nesting += 1
        if self.nesting > _MAX_NESTING:
            raise self.error("the expression is nested too deeply")
        node = self.parse_condexpr() if with_condexpr else self.parse_or()
        self.nesting -= 1
        return node

    def parse_condexpr(self):
        pos = self.cur.pos
        node = self.parse_or()
        while self.skip_name("if"):
            test = self.parse_or()
            otherwise = self.parse_condexpr() if self.skip_name("else") else None
            node = _CondExpr(pos, test, node, otherwise)
        return node

    def parse_or(self):
        node = self.parse_and()
        while self.is_name("or"):
            pos = self.next().pos
            node = _Or(pos, node, self.parse_and())
        return node

    def parse_and(self):
        node = self.parse_not()
        while self.is_name("and"):
            pos = self.next().pos
            node = _And(pos, node, self.parse_not())
        return node

    def parse_not(self):
        if self.is_name("not"):
            pos = self.next().pos
            return _Not(pos, self.parse_not())
        return self.parse_compare()

    def parse_compare(self):
        pos = self.cur.pos
        node = self.parse_math1()
        ops = []
        while True:
            tok = self.cur
            if tok.kind == "op" and tok.value in ("==", "!=", "<", "<=", ">", ">="):
                self.next()
                ops.append((tok.value, self.parse_math1()))
            elif self.is_name("in"):
                self.next()
                ops.append(("in", self.parse_math1()))
            elif self.is_name("not") and self.is_name("in", self.look()):
                self.i += 2
                ops.append(("not in", self.parse_math1()))
            else:
                break
        return _Compare(pos, node, ops) if ops else node

    def parse_math1(self):
        node = self.parse_concat()
        while self.cur.kind == "op" and self.cur.value in ("+", "-"):
            tok = self.next()
            node = _BinOp(tok.pos, tok.value, node, self.parse_concat())
        return node

    def parse_concat(self):
        pos = self.cur.pos
        parts = [self.parse_math2()]
        while self.skip_op("~"):
            parts.append(self.parse_math2())
        return _Concat(pos, parts) if len(parts) > 1 else parts[0]

    def parse_math2(self):
        node = self.parse_pow()
        while self.cur.kind == "op" and self.cur.value in ("*", "/", "//", "%"):
            tok = self.next()
            node = _BinOp(tok.pos, tok.value, node, self.parse_pow())
        return node

    def parse_pow(self):
        node = self.parse_unary()
        while self.is_op("**"):  # left-associative in Jinja2: 2 ** 3 ** 2 is 64
            tok = self.next()
            right = self.parse_unary()
            base = _constant(node)
            if isinstance(base, (int, float)) and not isinstance(base, bool) and \
                    math.copysign(1, base) < 0 and _constant(right) is _MISSING:
                # Jinja2 folds a constant base such as -3 and writes it into Python code
                # unparenthesized, so -3 ** x computes -(3 ** x); only when the exponent
                # is not constant too (else it folds the whole power as (-3) ** x).
                node = _Neg(tok.pos, _BinOp(tok.pos, "**", _Const(node.pos, -base), right))
            else:
                node = _BinOp(tok.pos, "**", node, right)
        return node

    def parse_unary(self, with_filter=True):
        tok = self.cur
        if self.is_op("-"):
            self.next()
            node = _Neg(tok.pos, self.parse_unary(False))
        elif self.is_op("+"):
            self.next()
            node = _Pos(tok.pos, self.parse_unary(False))
        else:
            node = self.parse_primary()
        node = self.parse_postfix(node)
        if with_filter:
            node = self.parse_filter_expr(node)
        return node

    def parse_primary(self):
        tok = self.cur
        if tok.kind == "name":
            self.next()
            if tok.value in ("true", "True"):
                return _Const(tok.pos, True)
            if tok.value in ("false", "False"):
                return _Const(tok.pos, False)
            if tok.value in ("none", "None"):
                return _Const(tok.pos, None)
            return _Name(tok.pos, tok.value)
        if tok.kind == "string":
            parts = []
            while self.cur.kind == "string":  # adjacent literals are one string
                parts.append(self.next().value)
            return _Const(tok.pos, "".join(parts))
        if tok.kind in ("int", "float"):
            self.next()
            return _Const(tok.pos, tok.value)
        if self.is_op("("):
            self.next()
            node = self.parse_tuple(explicit_parentheses=True)
            self.expect_op(")")
            return node
        if self.is_op("["):
            return self.parse_list()
        if self.is_op("{"):
            return self.parse_dict()
        raise self.error(f"expected an expression, got {tok.describe()}")

    def parse_list(self):
        pos = self.expect_op("[").pos
        items = []
        while not self.is_op("]"):
            if items:
                self.expect_op(",")
                if self.is_op("]"):
                    break
            items.append(self.parse_expression())
        self.next()
        return _Seq(pos, items, list)

    def parse_dict(self):
        pos = self.expect_op("{").pos
        pairs = []
        while not self.is_op("}"):
            if pairs:
                self.expect_op(",")
                if self.is_op("}"):
                    break
            key = self.parse_expression()
            self.expect_op(":")
            pairs.append((key, self.parse_expression()))
        self.next()
        return _Dict(pos, pairs)

    def parse_postfix(self, node):
        while True:
            if self.is_op(".") or self.is_op("["):
                node = self.parse_subscript(node)
            elif self.is_op("("):
                node = self.parse_call(node)
            else:
                return node

    def parse_filter_expr(self, node):
        while True:
            if self.is_op("|"):
                node = self.parse_filter(node)
            elif self.is_name("is"):
                node = self.parse_test(node)
            elif self.is_op("("):
                node = self.parse_call(node)
            else:
                return node

    def parse_subscript(self, node):
        tok = self.next()
        if tok.value == ".":
            attr = self.next()
            if attr.kind == "name":
                return _GetAttr(tok.pos, node, attr.value)
            if attr.kind == "int":
                return _GetItem(tok.pos, node, _Const(attr.pos, attr.value))
            raise self.error(f"expected an attribute name after '.', got {attr.describe()}",
                             attr)
        keys = []
        while not self.is_op("]"):
            if keys:
                self.expect_op(",")
            keys.append(self.parse_subscribed())
        self.next()
        if not keys:
            raise self.error("expected a subscript inside '[]'", tok)
        key = keys[0] if len(keys) == 1 else _Seq(tok.pos, keys, tuple)
        return _GetItem(tok.pos, node, key)

    def parse_subscribed(self):
        pos = self.cur.pos
        if self.is_op(":"):
            self.next()
            parts = [None]
        else:
            node = self.parse_expression()
            if not self.skip_op(":"):
                return node
            parts = [node]
        parts.append(None if self.is_op(":") or self.is_op("]") or self.is_op(",")
                     else self.parse_expression())
        if self.skip_op(":"):
            parts.append(None if self.is_op("]") or self.is_op(",")
                         else self.parse_expression())
        else:
            parts.append(None)
        return _Slice(pos, *parts)

    def parse_call_args(self):
        self.expect_op("(")
        args, kwargs, star, dstar = [], [], None, None
        first = True
        while not self.is_op(")"):
            if not first:
                self.expect_op(",")
                if self.is_op(")"):
                    break
            first = False
            if self.skip_op("*"):
                star = self.parse_expression()
            elif self.skip_op("**"):
                dstar = self.parse_expression()
            elif self.cur.kind == "name" and self.is_op("=", self.look()):
                key = self.next().value
                self.next()
                kwargs.append((key, self.parse_expression()))
            else:
                if kwargs or star is not None or dstar is not None:
                    raise self.error("a positional argument follows keyword arguments")
                args.append(self.parse_expression())
        self.next()
        return args, kwargs, star, dstar

    def parse_call(self, node):
        pos = self.cur.pos
        return _Call(pos, node, *self.parse_call_args())

    def _dotted_name(self):
        name = self.expect_name().value
        while self.is_op(".") and self.look().kind == "name":
            self.next()
            name += "." + self.next().value
        return name

    def parse_filter(self, node, start_inline=False):
        while self.is_op("|") or start_inline:
            if not start_inline:
                self.next()
            start_inline = False
            tok = self.cur
            name = self._dotted_name()
            fn = FILTERS.get(name)
            if fn is None:
                raise self.error(f"no filter named '{name}'", tok)
            call = self.parse_call_args() if self.is_op("(") else ([], [], None, None)
            node = _Filter(tok.pos, node, name, fn, call)
        return node

    def parse_filter_chain(self, start_inline=False):
        """The filters of a block set or filter block: a list of _Filter applied in turn."""
        filters = []
        node = self.parse_filter(None, start_inline) if (start_inline or self.is_op("|")) \
            else None
        while isinstance(node, _Filter):
            filters.append(node)
            node = node.node
        return filters[::-1]

    def parse_test(self, node):
        pos = self.next().pos  # 'is'
        negated = self.skip_name("not")
        tok = self.cur
        name = self._dotted_name()
        fn = TESTS.get(name)
        if fn is None:
            raise self.error(f"no test named '{name}'", tok)
        cur = self.cur
        if self.is_op("("):
            call = self.parse_call_args()
        elif (cur.kind in ("name", "string", "int", "float")
              or (cur.kind == "op" and cur.value in ("(", "[", "{"))) \
                and not (cur.kind == "name" and cur.value in ("else", "or", "and")):
            if self.is_name("is"):
                raise self.error("tests cannot be chained with 'is'")
            arg = self.parse_postfix(self.parse_primary())
            call = ([arg], [], None, None)
        else:
            call = ([], [], None, None)
        node = _Test(tok.pos, node, name, fn, call)
        return _Not(pos, node) if negated else node


def _constant(node):
    """The value of an expression made of number literals, unary signs and arithmetic only
    (what Jinja2 folds at compile time), else _MISSING."""
    if not all(isinstance(n, (_Const, _Neg, _Pos, _BinOp)) for n in node.walk()):
        return _MISSING
    try:
        return node.ev(_Scope(None, {}, _State(1 << 20, 0, 0)))
    except (TemplateError, TypeError, ValueError, ArithmeticError):
        return _MISSING


def _alternatives(names):
    quoted = [f"'{n}'" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


# -- the template --------------------------------------------------------------------------


class ChatTemplate:
    """A parsed chat template. ``ChatTemplate(source).render(messages=..., ...)``."""

    def __init__(self, source, *, max_output=16 << 20, max_iterations=1_000_000,
                 max_depth=40, max_seconds=10.0):
        if not isinstance(source, str):
            raise TypeError(f"a chat template is a str, not {type(source).__name__}")
        # As Jinja2: newlines normalized to \n, and one trailing newline dropped
        # (keep_trailing_newline=False).
        text = _NEWLINE_RE.sub("\n", source)
        if text.endswith("\n"):
            text = text[:-1]
        self.source = source
        self.max_output, self.max_iterations, self.max_depth, self.max_seconds = \
            max_output, max_iterations, max_depth, max_seconds
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        try:
            tokens = _Lexer(text, self._locate).tokens()
            self._nodes = _Parser(tokens, self._locate).parse()
        except RecursionError:
            raise TemplateError("the template is nested too deeply") from None

    def _locate(self, offset):
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    def render(self, messages=None, add_generation_prompt=False, **variables):
        """The prompt text for ``messages`` (a list of {"role", "content", ...} dicts).
        Other keywords (bos_token, eos_token, tools, documents, ...) become template
        variables; a variable not passed is undefined. Raises TemplateError."""
        context = dict(GLOBALS)
        context.update(variables)
        if messages is not None:
            context["messages"] = messages
        context["add_generation_prompt"] = add_generation_prompt
        state = _State(self.max_output, self.max_iterations, self.max_depth, self.max_seconds)
        out = []
        try:
            _render_nodes(self._nodes, _Scope(None, context, state), out)
        except TemplateError as e:
            if e.line is None and e._offset is not None:
                e.line, e.column = self._locate(e._offset)
            raise
        except RecursionError:
            raise TemplateError("the template recursed too deeply") from None
        except (_Break, _Continue):  # pragma: no cover - the parser keeps them in loops
            raise TemplateError("break/continue outside a loop") from None
        return "".join(out)
