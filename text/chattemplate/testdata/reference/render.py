"""Reference renderings for text/chattemplate's tests, made with Python
Jinja2 set up as transformers' apply_chat_template sets it up.

Usage: python3 render.py INPUT_JSON OUTPUT_JSON

INPUT_JSON is the same as render.mjs takes ({"templates", "cases"}; each
case's "vars" are the template's variables), plus an optional "now"
("YYYY-MM-DDTHH:MM:SS") that strftime_now formats instead of the clock.
OUTPUT_JSON gets, for each case, {"text": ...} or {"error": ...}.

The environment is transformers': an ImmutableSandboxedEnvironment with
trim_blocks and lstrip_blocks, the loopcontrols extension and a
{% generation %} tag, and the globals raise_exception and strftime_now and
the tojson filter as transformers defines them.
"""

import json
import platform
import sys
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.exceptions import TemplateError
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(Extension):
    """{% generation %}...{% endgeneration %} renders its body (transformers
    also records where it is, for assistant token masks)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render_body"), [], [], body).set_lineno(lineno)

    def _render_body(self, caller):
        return caller()


def main():
    input_path, output_path = sys.argv[1], sys.argv[2]
    with open(input_path, encoding="utf-8") as f:
        data = json.load(f)
    now = datetime.fromisoformat(data["now"]) if data.get("now") else None

    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return (now or datetime.now()).strftime(format)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now

    templates, parse_errors = {}, {}
    for name, source in data.get("templates", {}).items():
        try:
            templates[name] = env.from_string(source)
        except Exception as e:  # noqa: BLE001 - any failure is the answer
            parse_errors[name] = f"{type(e).__name__}: {e}"

    results = []
    for case in data.get("cases", []):
        name = case["template"]
        if name in parse_errors:
            results.append({"error": parse_errors[name]})
            continue
        try:
            results.append({"text": templates[name].render(**case.get("vars", {}))})
        except Exception as e:  # noqa: BLE001
            results.append({"error": f"{type(e).__name__}: {e}"})

    with open(output_path, "w", encoding="utf-8") as f:
        json.dump(
            {
                "implementation": f"Jinja2 {jinja2.__version__} (Python {platform.python_version()})",
                "results": results,
            },
            f,
            ensure_ascii=False,
        )


if __name__ == "__main__":
    main()
