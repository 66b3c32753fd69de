#!/usr/bin/env python3
"""Parses an exposition with prometheus_client and prints it as JSON.

    parse.py text|openmetrics FILE

Prints [{"name", "type", "help", "unit", "samples": [{"name", "labels",
"value"}]}], values as Python's repr of the float ("inf", "nan", "0.1") so
that nothing is lost in JSON. A parser error is an exception and a non-zero
exit; a missing prometheus_client is exit 2, never a skip.
"""

import json
import sys

try:
    from prometheus_client.openmetrics.parser import (
        text_string_to_metric_families as parse_openmetrics,
    )
    from prometheus_client.parser import text_string_to_metric_families as parse_text
except ImportError as e:  # the point is to fail loudly
    print(f"prometheus_client is not installed: {e}", file=sys.stderr)
    sys.exit(2)


def main():
    fmt, path = sys.argv[1], sys.argv[2]
    with open(path, encoding="utf-8") as f:
        body = f.read()
    parse = {"text": parse_text, "openmetrics": parse_openmetrics}[fmt]
    out = []
    for fam in parse(body):
        out.append(
            {
                "name": fam.name,
                "type": fam.type,
                "help": fam.documentation,
                "unit": fam.unit,
                "samples": [
                    {"name": s.name, "labels": dict(s.labels), "value": repr(float(s.value))}
                    for s in fam.samples
                ],
            }
        )
    json.dump(out, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
