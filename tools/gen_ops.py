#!/usr/bin/env python3
"""Generates python/nxrt/ops.py (one function per standard ONNX op) and
python/nxrt/_op_table.py (default output counts for nxrt.eager.dispatch) from the op
schemas of the installed onnx package. onnx is needed only here, at generation time.

Usage: python3 tools/gen_ops.py   (then commit both generated files)
"""

import keyword
import os
import re
import textwrap

import onnx
import onnx.defs
from onnx import AttributeProto, helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OPS_PATH = os.path.join(ROOT, "python", "nxrt", "ops.py")
TABLE_PATH = os.path.join(ROOT, "python", "nxrt", "_op_table.py")

SINGLE = onnx.defs.OpSchema.FormalParameterOption.Single
OPTIONAL = onnx.defs.OpSchema.FormalParameterOption.Optional
VARIADIC = onnx.defs.OpSchema.FormalParameterOption.Variadic

# Ops whose attributes are graphs: eager calls cannot pass a graph.
SKIPPED = {"If", "Loop", "Scan", "SequenceMap"}

ATTR_TYPES = {
    AttributeProto.FLOAT: ("float", "FLOAT"),
    AttributeProto.INT: ("int", "INT"),
    AttributeProto.STRING: ("str", "STRING"),
    AttributeProto.TENSOR: ("np.ndarray", "TENSOR"),
    AttributeProto.FLOATS: ("Sequence[float]", "FLOATS"),
    AttributeProto.INTS: ("Sequence[int]", "INTS"),
    AttributeProto.STRINGS: ("Sequence[str]", "STRINGS"),
    AttributeProto.TENSORS: ("Sequence[np.ndarray]", "TENSORS"),
}


def snake(name):
    """ONNX op name -> Python function name (ReduceMean -> reduce_mean, And -> and_)."""
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()
    s = s.replace("mat_mul", "matmul").replace("q_linear", "qlinear")
    return s + "_" if keyword.iskeyword(s) else s


def identifier(name, taken):
    s = re.sub(r"\W", "_", name)
    s = s if not s[:1].isdigit() else "_" + s
    if s[:1].isupper() and len(s) <= 2 or s in ("X", "Y", "B", "W", "R", "A", "C", "T", "V", "K", "Q"):
        s = s.lower()
    if keyword.iskeyword(s) or s in ("np", "Sequence", "ArrayLike", "Any"):
        s += "_"
    while s in taken:
        s += "_"
    taken.add(s)
    return s


def summary(doc):
    """The first paragraph of a schema's doc, as plain text."""
    doc = (doc or "").strip()
    paras = re.split(r"\n\s*\n", doc) if doc else [""]
    para = paras[0]
    if para.rstrip().endswith(":") and len(paras) > 1:  # "computes ...:" then the formula
        para += " " + paras[1]
    para = re.sub(r"\s+", " ", para).strip()
    return para or "(no description in the schema)"


def one_line(text, limit=200):
    text = re.sub(r"\s+", " ", (text or "")).strip()
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def default_literal(attr):
    """(Python literal, text for the docstring) of an attribute's default, or None."""
    if not attr.default_value.name and attr.default_value.type == 0:
        return None
    value = helper.get_attribute_value(attr.default_value)
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, float):
        return repr(value), repr(value)
    if isinstance(value, (int, str)):
        return repr(value), repr(value)
    if isinstance(value, list):
        value = [v.decode() if isinstance(v, bytes) else v for v in value]
        return repr(value), repr(value)
    return None  # tensors: no literal; the kernel applies the spec default


def output_counts(schema):
    """(default count, max count) of outputs; default 0 marks a variadic output."""
    options = [o.option for o in schema.outputs]
    if VARIADIC in options:
        return 0, -1
    required = sum(1 for o in options if o == SINGLE)
    # Required outputs are listed first; ops whose outputs are all optional (LSTM) return
    # all of them.
    return (required or len(options)), len(options)


def generate_function(schema):
    name = snake(schema.name)
    default_outputs, max_outputs = output_counts(schema)
    extra_outputs = default_outputs != 0 and max_outputs > default_outputs
    taken = {"num_outputs"} if extra_outputs else set()
    params, inputs_code, doc_inputs = [], [], []
    variadic = None
    for i, inp in enumerate(schema.inputs):
        pname = identifier(inp.name, taken)
        desc = one_line(inp.description)
        if inp.option == VARIADIC:
            variadic = pname
            params.append(f"*{pname}: ArrayLike")
            doc_inputs.append(f"    *{pname} ({inp.type_str}, variadic): {desc}")
        elif inp.option == OPTIONAL:
            params.append(f"{pname}: ArrayLike | None = None")
            doc_inputs.append(f"    {pname} ({inp.type_str}, optional): {desc}")
            inputs_code.append(pname)
        else:
            params.append(f"{pname}: ArrayLike")
            doc_inputs.append(f"    {pname} ({inp.type_str}): {desc}")
            inputs_code.append(pname)
    # Trailing optional inputs default to None, so earlier required ones must not follow
    # an optional one: ONNX schemas list required inputs first, but guard anyway.
    seen_optional = False
    for k, p in enumerate(params):
        if "= None" in p:
            seen_optional = True
        elif seen_optional and not p.startswith("*"):
            params[k] = p + " = None"
    attr_params, attr_code, doc_attrs = [], [], []
    for attr_name in sorted(schema.attributes):
        attr = schema.attributes[attr_name]
        if attr.type not in ATTR_TYPES:
            continue  # graphs, sparse tensors, type protos
        pname = identifier(attr_name, taken)
        py_type, onnx_type = ATTR_TYPES[attr.type]
        default = default_literal(attr)
        desc = one_line(attr.description)
        if attr.required:
            attr_params.append(f"{pname}: {py_type}")
            doc_attrs.append(f"    {pname} ({onnx_type}, required): {desc}")
        elif default is not None:
            attr_params.append(f"{pname}: {py_type} = {default[0]}")
            doc_attrs.append(f"    {pname} ({onnx_type}, default {default[1]}): {desc}")
        else:
            attr_params.append(f"{pname}: {py_type} | None = None")
            doc_attrs.append(f"    {pname} ({onnx_type}, optional): {desc}")
        attr_code.append(f"{attr_name!r}: {pname}")
    # Required keyword-only parameters first, for readability.
    attr_params.sort(key=lambda p: "=" in p)
    if extra_outputs:
        attr_params.append("num_outputs: int | None = None")
    signature = ", ".join(params)
    if attr_params:
        signature += (", " if signature else "") + ("*, " if variadic is None else "") + ", ".join(attr_params)

    if variadic is not None:
        ins = ("[" + ", ".join(inputs_code) + "] + list(" + variadic + ")") if inputs_code else f"list({variadic})"
    else:
        ins = "[" + ", ".join(inputs_code) + "]"
    attrs = "{" + ", ".join(attr_code) + "}" if attr_code else "None"

    outs = [f"    {o.name} ({o.type_str}{', optional' if o.option == OPTIONAL else ''}"
            f"{', variadic' if o.option == VARIADIC else ''}): {one_line(o.description)}"
            for o in schema.outputs]
    if default_outputs == 1 and not extra_outputs:
        returns = "The output array."
        body = f"return _one({schema.name!r}, {ins}, {attrs})"
        ret_type = "Any"
    elif default_outputs == 0:
        returns = "A tuple of the output arrays (their count follows from the arguments)."
        body = f"return tuple(_dispatch({schema.name!r}, {ins}, {attrs}, opset=_OPSET))"
        ret_type = "tuple[Any, ...]"
    else:
        returns = (f"The output array, or a tuple of the first ``num_outputs`` outputs "
                   f"(default {default_outputs})." if extra_outputs and default_outputs == 1
                   else f"A tuple of the outputs (the first ``num_outputs``; default "
                        f"{default_outputs}).")
        n = "num_outputs" if extra_outputs else str(default_outputs)
        body = f"return _many({schema.name!r}, {ins}, {attrs}, {n}, {default_outputs})"
        ret_type = "Any"

    doc = textwrap.wrap(summary(schema.doc), 88) + ["",
           f"ONNX ``{schema.name}`` (ai.onnx, schema version {schema.since_version}).", ""]
    if doc_inputs:
        doc += ["Inputs:"] + doc_inputs + [""]
    if doc_attrs:
        doc += ["Attributes:"] + doc_attrs + [""]
    doc += ["Outputs:"] + outs + ["", "Returns: " + returns]
    doc_text = "\n".join(("    " + line) if line else "" for line in doc)
    doc_text = doc_text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return (f"def {name}({signature}) -> {ret_type}:\n"
            f'    """{doc_text.strip()}\n    """\n'
            f"    {body}\n"), name


HEADER = '''"""One function per standard ONNX op (ai.onnx opset {opset}), run eagerly by nxrt.

Generated by tools/gen_ops.py from the onnx {onnx_version} op schemas; do not edit.
Inputs are positional (numpy arrays, scalars, lists; None for an omitted optional
input), attributes are keyword arguments with the schema's defaults. Ops with several
required outputs return a tuple. See nxrt.eager for how values are converted.
"""
# flake8: noqa
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .eager import LATEST_ONNX_OPSET as _OPSET
from .eager import dispatch as _dispatch


def _one(op, inputs, attributes):
    return _dispatch(op, inputs, attributes, opset=_OPSET, num_outputs=1)[0]


def _many(op, inputs, attributes, num_outputs, default):
    n = default if num_outputs is None else num_outputs
    outputs = _dispatch(op, inputs, attributes, opset=_OPSET, num_outputs=n)
    return outputs[0] if num_outputs is None and default == 1 else tuple(outputs)


'''


def main():
    opset = onnx.defs.onnx_opset_version()
    schemas = {}
    for s in onnx.defs.get_all_schemas():  # latest version of each op
        if s.domain == "" and not s.deprecated and s.name not in SKIPPED:
            schemas[s.name] = s
    functions, names, table = [], [], {}
    for op in sorted(schemas):
        code, name = generate_function(schemas[op])
        functions.append(code)
        names.append(name)
        default, _ = output_counts(schemas[op])
        if default != 1:
            table[op] = default
    with open(OPS_PATH, "w") as f:
        f.write(HEADER.format(opset=opset, onnx_version=onnx.__version__))
        f.write("\n\n".join(functions))
        f.write("\n\n__all__ = [\n" + "".join(f"    {n!r},\n" for n in names) + "]\n")
    with open(TABLE_PATH, "w") as f:
        f.write('"""Generated by tools/gen_ops.py from the onnx {} op schemas; do not edit."""\n\n'
                .format(onnx.__version__))
        f.write(f"# ai.onnx opset of the schemas.\nSCHEMA_OPSET = {opset}\n\n")
        f.write("# Outputs nxrt.eager.dispatch computes by default for ops where it is not 1:\n"
                "# the required outputs (all of them when every output is optional); 0 marks\n"
                "# a variable count (Split), derived from the call's arguments.\n")
        f.write("DEFAULT_OUTPUTS = {\n" + "".join(f"    {k!r}: {v},\n" for k, v in sorted(table.items())) + "}\n")
    print(f"wrote {len(names)} ops (opset {opset}) to {OPS_PATH} and {TABLE_PATH}")


if __name__ == "__main__":
    main()
