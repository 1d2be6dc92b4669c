"""Parses a Prometheus text exposition with the reference parser.

Reads the text on stdin and writes JSON on stdout: a list of families,
each {"name", "type", "documentation", "samples": [{"name", "labels",
"value"}]}, as prometheus_client.parser.text_string_to_metric_families
(Debian's python3-prometheus-client) reads them. A text the parser
refuses exits 1 with its message on stderr.
"""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def main():
    text = sys.stdin.read()
    try:
        families = [
            {
                "name": f.name,
                "type": f.type,
                "documentation": f.documentation,
                "samples": [
                    {"name": s.name, "labels": s.labels, "value": s.value}
                    for s in f.samples
                ],
            }
            for f in text_string_to_metric_families(text)
        ]
    except Exception as e:  # the parser raises ValueError and others
        sys.stderr.write("prometheus parser: %s\n" % e)
        return 1
    json.dump(families, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
