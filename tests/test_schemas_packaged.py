"""Kafka's message schemas ship inside the package (``impl/protocol/schemas``), verbatim from
apache/kafka at the reference commit, and nothing in the project reads outside it.

- every shipped file matches the manifest ``SHA256SUMS`` (and the manifest lists every file);
- every API of ``api_keys._TABLE`` (every forwardable one in particular) has its request and
  response schema, with the table's valid and flexible versions;
- the default schema directory is inside the ``impl`` package, also for a fresh interpreter;
- ``scripts/fetch-kafka-schemas`` verifies a copy laid out as apache/kafka and reports changes;
- no code, build or packaging file names the folder outside the repository that the schemas
  used to be read from.
"""
from __future__ import annotations

import hashlib
import importlib.resources
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import impl
from impl.protocol import api_keys
from impl.protocol.schema import (DEFAULT_SCHEMA_DIR, SCHEMA_DIR_ENV, load_schemas, read_schema,
                                  schema_dir)

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS_DIR = ROOT / "impl" / "protocol" / "schemas"
COMMIT = "1eb7644349cb07139d6a3c1ad1986979647cac99"
SCRIPT = ROOT / "scripts" / "fetch-kafka-schemas"

MESSAGE_DIR = "clients/src/main/resources/common/message"
METADATA_DIR = "metadata/src/main/resources/common/metadata"
RECORDS = ("RegisterControllerRecord", "RegisterBrokerRecord", "BrokerRegistrationChangeRecord")
# What the implementation reads by name, besides every API's request and response.
USED = ("RequestHeader", "ResponseHeader", "DefaultPrincipalData", "EnvelopeRequest",
        "EnvelopeResponse", "ApiVersionsRequest", "ControllerRegistrationRequest",
        "DescribeClusterResponse", "MetadataResponse", "BrokerRegistrationRequest",
        "CreateTopicsRequest", "CreateAclsRequest", "IncrementalAlterConfigsRequest") + RECORDS


def manifest() -> dict[str, str]:
    entries = {}
    for line in (SCHEMAS_DIR / "SHA256SUMS").read_text(encoding="utf-8").splitlines():
        digest, separator, name = line.partition("  ")
        assert separator and re.fullmatch(r"[0-9a-f]{64}", digest), line
        entries[name] = digest
    return entries


def shipped() -> list[Path]:
    return sorted(path for path in SCHEMAS_DIR.iterdir() if path.name != "SHA256SUMS")


def test_every_shipped_file_matches_the_manifest():
    entries = manifest()
    assert sorted(entries) == [path.name for path in shipped()]
    for path in shipped():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == entries[path.name], path.name


def test_the_folder_holds_the_schemas_licence_and_readme():
    names = {path.name for path in shipped()}
    assert {"LICENSE", "NOTICE", "README.md"} <= names
    assert {f"{name}.json" for name in USED} <= names
    # package-data "schemas/*" does not recurse: everything must be a plain file
    assert all(path.is_file() for path in SCHEMAS_DIR.iterdir())
    readme = (SCHEMAS_DIR / "README.md").read_text(encoding="utf-8")
    for needed in (COMMIT, "https://github.com/apache/kafka", MESSAGE_DIR, METADATA_DIR,
                   "Apache License 2.0", "scripts/fetch-kafka-schemas"):
        assert needed in readme, needed
    assert "Apache License" in (SCHEMAS_DIR / "LICENSE").read_text(encoding="utf-8")
    assert (SCHEMAS_DIR / "NOTICE").read_text(encoding="utf-8").startswith("Apache Kafka")


def test_every_shipped_schema_parses_and_is_named_after_its_file():
    files = sorted(SCHEMAS_DIR.glob("*.json"))
    assert len(files) >= 188
    for path in files:
        assert read_schema(path).name == path.stem


SHIPPED = load_schemas(SCHEMAS_DIR)


@pytest.mark.parametrize("key, name, valid, flexible, forwardable", api_keys._TABLE)
def test_every_api_has_request_and_response_schemas_with_the_tables_versions(
        key, name, valid, flexible, forwardable):
    api = api_keys.API_KEYS[key]
    assert api.name == name
    for kind in ("request", "response"):
        schema = SHIPPED[f"{api.message_name}{kind.capitalize()}"]
        assert (schema.type, schema.api_key) == (kind, key)
        assert str(schema.valid_versions) == valid, schema.name
        assert str(schema.flexible_versions) == flexible, schema.name


def test_every_forwardable_api_has_its_schemas():
    forwardable = [row for row in api_keys._TABLE if row[4]]
    assert {row[0] for row in forwardable} == api_keys.FORWARDABLE_API_KEYS
    assert len(forwardable) == 21
    for key, *_ in forwardable:
        name = api_keys.API_KEYS[key].message_name
        assert f"{name}Request" in SHIPPED and f"{name}Response" in SHIPPED, name


def test_the_schema_directory_is_inside_the_package(monkeypatch):
    package = Path(impl.__file__).resolve().parent
    assert DEFAULT_SCHEMA_DIR.resolve().is_relative_to(package)
    assert DEFAULT_SCHEMA_DIR.resolve() == SCHEMAS_DIR.resolve()
    packaged = importlib.resources.files("impl.protocol") / "schemas"
    assert Path(str(packaged)).resolve() == DEFAULT_SCHEMA_DIR.resolve()
    monkeypatch.delenv(SCHEMA_DIR_ENV, raising=False)
    assert schema_dir() == DEFAULT_SCHEMA_DIR.resolve()


def test_a_fresh_interpreter_reads_the_packaged_schemas(tmp_path):
    """Run from elsewhere with ``KIPCHECK_SCHEMAS`` unset: the schemas come from the package."""
    env = {key: value for key, value in os.environ.items() if key != SCHEMA_DIR_ENV}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [sys.executable, "-c", "import impl.protocol as p; "
                               "print(len(p.SCHEMAS), p.SCHEMAS.directory, "
                               "p.get_schema('DeleteTopicsRequest').api_key)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    count, directory, key = result.stdout.split()
    assert int(count) >= 188 and int(key) == 20
    assert Path(directory).resolve() == SCHEMAS_DIR.resolve()


# ------------------------------------------------------------------------------------------
# scripts/fetch-kafka-schemas, on a copy laid out as apache/kafka (no network)


def kafka_layout(root: Path) -> Path:
    """The shipped files put back where apache/kafka keeps them."""
    (root / MESSAGE_DIR).mkdir(parents=True)
    (root / METADATA_DIR).mkdir(parents=True)
    for path in shipped():
        if path.name in ("README.md",):
            continue
        if path.name in ("LICENSE", "NOTICE"):
            target = root / path.name
        elif path.stem in RECORDS:
            target = root / METADATA_DIR / path.name
        else:
            target = root / MESSAGE_DIR / path.name
        shutil.copyfile(path, target)
    (root / MESSAGE_DIR / "README.md").write_text("not shipped\n")
    return root


def run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=120)


def test_script_is_executable_and_verifies_the_manifest_offline():
    assert os.access(SCRIPT, os.X_OK)
    result = run_script("--verify", "--offline")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "OK" in result.stdout


def test_script_verifies_and_updates_from_a_local_copy(tmp_path):
    upstream = kafka_layout(tmp_path / "kafka")
    result = run_script("--verify", "--from", str(upstream))
    assert result.returncode == 0, result.stdout + result.stderr
    # A shipped copy that drifted is reported, file by file, and --update repairs it.
    copy = tmp_path / "schemas"
    shutil.copytree(SCHEMAS_DIR, copy)
    with open(copy / "EnvelopeRequest.json", "a") as changed:
        changed.write(" ")
    (copy / "DeleteTopicsRequest.json").unlink()
    result = run_script("--verify", "--from", str(upstream), "--dir", str(copy))
    assert result.returncode == 1
    assert "EnvelopeRequest.json: differs from apache/kafka" in result.stdout
    assert "DeleteTopicsRequest.json: in apache/kafka but not shipped" in result.stdout
    assert run_script("--update", "--from", str(upstream), "--dir", str(copy)).returncode == 0
    for path in shipped():
        assert (copy / path.name).read_bytes() == path.read_bytes(), path.name
    assert (copy / "SHA256SUMS").read_bytes() == (SCHEMAS_DIR / "SHA256SUMS").read_bytes()


def test_script_fails_with_one_line_when_the_source_cannot_be_read(tmp_path):
    result = run_script("--verify", "--from", str(tmp_path / "nowhere"))
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "nowhere" in result.stderr


# ------------------------------------------------------------------------------------------
# Nothing reads outside the repository


CODE_PATHS = ("model", "properties", "impl", "kipcheck", "bench", "scripts", "Makefile",
              "pyproject.toml")
FORBIDDEN = re.compile(r"\.\./shared|shared/reference")


def project_files() -> list[Path]:
    files = []
    for name in CODE_PATHS:
        path = ROOT / name
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += [p for p in sorted(path.rglob("*")) if p.is_file()
                      and "__pycache__" not in p.parts and p.suffix != ".pyc"]
    return files


def test_no_project_file_reads_outside_the_repository():
    offenders = []
    for path in project_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if FORBIDDEN.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert project_files(), "the grep found no files"
    assert offenders == [], "\n".join(offenders)
