#!/usr/bin/env python3
"""Checks documents against push-connector's contract schemas (JSON Schema 2020-12).

    check.py schemas                 every schema is a valid 2020-12 schema and its $refs resolve
    check.py validate NAME FILE...   documents (JSON, or JSON Lines) against NAME.schema.json;
                                     prints one line per problem, exit 1 if any
    check.py docs                    every example in docs/*.md marked <!-- contract: NAME -->
                                     and in examples/ validates (examples/jobs/invalid.json must not)
    check.py corpus                  every bad document in contracts/bad/NAME.jsonl is refused,
                                     naming the field its line expects
    check.py apis DEFINITIONS.json   openapi.yaml is valid OpenAPI 3.1 (openapi-spec-validator);
                                     asyncapi.yaml's references resolve and its exchanges, queues
                                     and routing keys are those of `topology definitions`
    check.py fields NAME FILE...     prints the fields each document has that NAME's schema does
                                     not declare (what a producer added without a schema change)

Field names are printed as the binary prints them: `recipients[2].data.count`.
Needs the `jsonschema` package (Debian python3-jsonschema, or PyPI); run by the Swift tests
(ConnectorTests/ContractSchemaTests).
"""
import json
import os
import re
import sys

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BASE = "https://push-connector.invalid/contracts/"


def load_schemas():
    schemas = {}
    for name in sorted(os.listdir(HERE)):
        if name.endswith(".schema.json"):
            with open(os.path.join(HERE, name), encoding="utf-8") as f:
                schemas[name[: -len(".schema.json")]] = json.load(f)
    return schemas


SCHEMAS = load_schemas()

# The date-time format is asserted only when jsonschema has an RFC 3339 checker
# (rfc3339-validator); without it a day that does not exist would pass, silently.
if jsonschema.Draft202012Validator.FORMAT_CHECKER.conforms("2026-02-30T00:00:00Z", "date-time"):
    raise SystemExit("check.py: jsonschema cannot check date-time here: pip install rfc3339-validator")


def validator(name):
    """A 2020-12 validator for NAME whose $refs resolve to the files beside it."""
    if name not in SCHEMAS:
        raise SystemExit(f"check.py: no schema {name!r} (known: {', '.join(sorted(SCHEMAS))})")
    cls = jsonschema.Draft202012Validator
    try:  # jsonschema 4.18+
        from referencing import Registry, Resource
        registry = Registry().with_resources(
            (s["$id"], Resource.from_contents(s)) for s in SCHEMAS.values())
        return cls(SCHEMAS[name], registry=registry, format_checker=cls.FORMAT_CHECKER)
    except ImportError:  # Debian 12's 4.10
        store = {s["$id"]: s for s in SCHEMAS.values()}
        resolver = jsonschema.RefResolver(base_uri=SCHEMAS[name]["$id"], referrer=SCHEMAS[name], store=store)
        return cls(SCHEMAS[name], resolver=resolver, format_checker=cls.FORMAT_CHECKER)


def resolve(name, ref):
    """The subschema `ref` names from NAME's schema; ValueError when it names nothing."""
    target, _, fragment = ref.partition("#")
    key = target[: -len(".schema.json")] if target else name
    if key not in SCHEMAS:
        raise ValueError(f"$ref to a missing file: {ref}")
    node = SCHEMAS[key]
    for part in filter(None, fragment.split("/")):
        if not isinstance(node, dict) or part not in node:
            raise ValueError(f"$ref to nothing: {ref}")
        node = node[part]
    return node


def field_path(parts):
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "$"


def fields_of(error):
    """The fields an error names, as the binary names them (leaf errors of oneOf/anyOf too)."""
    path = list(error.absolute_path)
    if error.validator == "required":
        missing = re.match(r"'([^']+)' is a required property", error.message)
        return {field_path(path + [missing.group(1)])} if missing else {field_path(path)}
    if "propertyNames" in error.relative_schema_path:  # the name itself is wrong
        return {field_path(path + [error.instance])}
    if error.validator == "oneOf" and not path and error.schema is not None and all(
            set(branch.get("required", [])) <= {"recipients", "topic", "condition"} for branch in error.validator_value):
        return {"recipients|topic|condition"}
    found = {field_path(path)}
    for sub in error.context or []:
        found |= fields_of(sub)
    return found


def problems(name, document):
    """(fields, message) for each error of DOCUMENT against NAME."""
    return [(fields_of(e), f"{field_path(e.absolute_path)}: {e.message}")
            for e in sorted(validator(name).iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))]


def documents(path):
    """(label, document) for a JSON file, or each value of JSON Lines or of JSON values written
    one after another (what `push-connector compose` prints)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    decoder, position, number = json.JSONDecoder(), 0, 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return
        document, position = decoder.raw_decode(text, position)
        number += 1
        yield f"{path}#{number}", document


def cmd_schemas():
    bad = 0
    for name, schema in SCHEMAS.items():
        try:
            jsonschema.Draft202012Validator.check_schema(schema)
            if schema.get("$id") != BASE + name + ".schema.json":
                raise ValueError(f"$id is not {BASE}{name}.schema.json")
            for ref in re.findall(r'"\$ref": "([^"]*)"', json.dumps(schema)):
                resolve(name, ref)
        except Exception as error:  # noqa: BLE001 - report any failure by schema name
            print(f"{name}.schema.json: {error}")
            bad += 1
    print(f"{len(SCHEMAS) - bad} of {len(SCHEMAS)} schemas valid")
    return 1 if bad else 0


def cmd_validate(name, paths):
    bad = count = 0
    for path in paths:
        for label, document in documents(path):
            count += 1
            for _, message in problems(name, document):
                print(f"{label}: {message}")
                bad += 1
    print(f"{count} document(s) checked against {name}: {bad} problem(s)")
    return 1 if bad else 0


EXAMPLE = re.compile(r"<!-- contract: ([a-z-]+) -->\s*```json\n(.*?)```", re.S)


def cmd_docs():
    bad = count = 0
    for folder, _, names in os.walk(os.path.join(ROOT, "docs")):
        for name in sorted(names):
            if not name.endswith(".md"):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for match in EXAMPLE.finditer(text):
                count += 1
                line = text.count("\n", 0, match.start()) + 1
                label = f"{os.path.relpath(path, ROOT)}:{line} ({match.group(1)})"
                try:
                    document = json.loads(match.group(2))
                except json.JSONDecodeError as error:
                    print(f"{label}: not JSON: {error}")
                    bad += 1
                    continue
                for _, message in problems(match.group(1), document):
                    print(f"{label}: {message}")
                    bad += 1
    examples = os.path.join(ROOT, "examples")
    for name, schema, valid in [("apps.json", "apps", True)] + [
            (f"jobs/{n}", "send-job", n != "invalid.json") for n in sorted(os.listdir(os.path.join(examples, "jobs")))]:
        for label, document in documents(os.path.join(examples, name)):
            count += 1
            found = problems(schema, document)
            if valid:
                for _, message in found:
                    print(f"{os.path.relpath(label, ROOT)}: {message}")
                    bad += 1
            elif not found:
                print(f"{os.path.relpath(label, ROOT)}: an example of a bad job that the schema accepts")
                bad += 1
    print(f"{count} example(s) checked: {bad} problem(s)")
    return 1 if bad or count == 0 else 0


def corpus():
    """(schema, label, expected field, document) for every line of contracts/bad/*.jsonl."""
    folder = os.path.join(HERE, "bad")
    for name in sorted(os.listdir(folder)):
        if name.endswith(".jsonl"):
            for label, entry in documents(os.path.join(folder, name)):
                yield name[: -len(".jsonl")], os.path.relpath(label, ROOT), entry["field"], entry["document"]


def cmd_corpus():
    bad = count = 0
    for schema, label, field, document in corpus():
        count += 1
        found = problems(schema, document)
        named = set().union(*(fields for fields, _ in found)) if found else set()
        if not found:
            print(f"{label}: accepted by {schema}.schema.json (expected a problem at {field})")
            bad += 1
        elif field not in named:
            print(f"{label}: refused, but at {sorted(named)}, not at {field}")
            bad += 1
    print(f"{count} bad document(s): {count - bad} refused at the expected field")
    return 1 if bad or count == 0 else 0


def undeclared(schema, document, path="", root=None):
    """Fields of DOCUMENT that SCHEMA (objects with `properties`) does not declare; a map whose
    `additionalProperties` is a schema (string data, headers) is open by design."""
    root = root or schema
    ref = schema.get("$ref", "")
    if ref.startswith("#/"):  # a local definition, with the keywords beside the $ref on top
        schema = {**pointer(root, ref), **{k: v for k, v in schema.items() if k != "$ref"}}
    if not isinstance(document, dict) or "properties" not in schema or isinstance(schema.get("additionalProperties"), dict):
        return []
    found = []
    for key, value in document.items():
        child = schema["properties"].get(key)
        here = f"{path}.{key}" if path else key
        if child is None:
            found.append(here)
        else:
            found += undeclared(child, value, here, root)
    return found


def cmd_fields(name, paths):
    bad = 0
    for path in paths:
        for label, document in documents(path):
            for field in undeclared(SCHEMAS[name], document):
                print(f"{label}: {field} is not declared in {name}.schema.json")
                bad += 1
    return 1 if bad else 0


def pointer(document, ref):
    node = document
    for part in filter(None, ref.lstrip("#").split("/")):
        if not isinstance(node, dict) or part not in node:
            raise ValueError(f"$ref to nothing: {ref}")
        node = node[part]
    return node


def refs(node):
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def cmd_apis(definitions_path, _):
    import yaml
    from openapi_spec_validator import validate
    from openapi_spec_validator.readers import read_from_filename
    bad = []
    spec, url = read_from_filename(os.path.join(HERE, "openapi.yaml"))
    try:
        validate(spec, base_uri=url)
    except Exception as error:  # noqa: BLE001 - any refusal is reported
        bad.append(f"openapi.yaml: {str(error).splitlines()[0]}")
    if spec.get("openapi") != "3.1.0":
        bad.append("openapi.yaml: not OpenAPI 3.1.0")
    with open(os.path.join(HERE, "asyncapi.yaml"), encoding="utf-8") as f:
        asyncapi = yaml.safe_load(f)
    if asyncapi.get("asyncapi") != "3.0.0":
        bad.append("asyncapi.yaml: not AsyncAPI 3.0.0")
    for document, name in [(asyncapi, "asyncapi.yaml"), (spec, "openapi.yaml")]:
        for ref in refs(document):
            try:
                if ref.startswith("#"):
                    pointer(document, ref)
                else:
                    resolve(None, ref.removeprefix("./"))
            except ValueError as error:
                bad.append(f"{name}: {error}")
    with open(definitions_path, encoding="utf-8") as f:
        topology = json.load(f)
    exchanges = {e["name"]: e["type"] for e in topology["exchanges"]}
    queues = {q["name"] for q in topology["queues"]}
    keys = {(b["source"], b["routing_key"]) for b in topology["bindings"]}
    for name, channel in asyncapi.get("channels", {}).items():
        amqp = channel.get("bindings", {}).get("amqp", {})
        if amqp.get("is") == "queue":
            queue = amqp.get("queue", {}).get("name")
            if queue not in queues or channel.get("address") != queue:
                bad.append(f"asyncapi.yaml: channel {name}: queue {queue!r} is not in the topology (or not its address)")
        else:
            exchange = amqp.get("exchange", {})
            kind = exchanges.get(exchange.get("name"))
            if kind != exchange.get("type"):
                bad.append(f"asyncapi.yaml: channel {name}: exchange {exchange.get('name')!r} of type {exchange.get('type')!r} "
                           f"is not in the topology as such ({kind!r})")
            elif kind == "direct" and (exchange["name"], channel.get("address")) not in keys:
                bad.append(f"asyncapi.yaml: channel {name}: routing key {channel.get('address')!r} binds nothing on {exchange['name']}")
    for line in bad:
        print(line)
    print(f"openapi.yaml and asyncapi.yaml: {len(bad)} problem(s)")
    return 1 if bad else 0


def main(argv):
    commands = {"schemas": (0, cmd_schemas), "docs": (0, cmd_docs), "corpus": (0, cmd_corpus),
                "validate": (2, cmd_validate), "fields": (2, cmd_fields), "apis": (1, cmd_apis)}
    if not argv or argv[0] not in commands or len(argv) - 1 < commands[argv[0]][0]:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    arity, command = commands[argv[0]]  # the least number of arguments
    return command(argv[1], argv[2:]) if arity else command()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
