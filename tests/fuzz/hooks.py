"""Schemathesis hooks for fuzzing Jobdeck (scripts/fuzz.sh).

* Fuzzed jobs never run what the fuzzer made up: every request body that
  holds a job's container command (a list of strings) gets `true` instead;
  a command of another type stays, so its refusal is still checked.
* Half of the generated path parameters (by the value's own hash, so a run
  with the same seed is the same run) name things that exist: the job, its
  replica and the secrets scripts/fuzz.sh created first (JOBDECK_FUZZ_* in the
  environment), so operations are exercised past their 404. A DELETE never
  gets the job, which the other operations need.
* `DELETE /tokens/{id}` never names the fuzzer's own token (which would
  leave the rest of the run unauthorized): that id, and half of the others,
  become the token scripts/fuzz.sh made to be revoked.
"""

import hashlib
import os

import schemathesis

EXISTING = {
    "id": os.environ.get("JOBDECK_FUZZ_JOB", ""),
    "replica": os.environ.get("JOBDECK_FUZZ_JOB", "") + "-0-0",
    "name": os.environ.get("JOBDECK_FUZZ_SECRET", ""),
    "volume": "",
}


OWN_TOKEN = os.environ.get("JOBDECK_FUZZ_OWN_TOKEN", "")
VICTIM_TOKEN = os.environ.get("JOBDECK_FUZZ_VICTIM_TOKEN", "")


def _harmless(body):
    if isinstance(body, list):
        for item in body:
            _harmless(item)
        return
    if not isinstance(body, dict):
        return
    spec = body.get("spec")
    if isinstance(spec, dict):
        container = spec.get("container")
        command = container.get("command") if isinstance(container, dict) else None
        # Only a command the schema allows (a list of strings) could run;
        # one of a wrong type is left as it is, for the server to refuse.
        if isinstance(command, list) and all(isinstance(word, str) for word in command):
            container["command"] = ["true"]


def _coin(value):
    return hashlib.sha256(repr(value).encode()).digest()[0] % 2 == 0


@schemathesis.hook
def map_path_parameters(ctx, path_parameters):
    if not path_parameters:
        return path_parameters
    operation = getattr(ctx, "operation", None)
    method = getattr(operation, "method", "").upper()
    if getattr(operation, "path", "") == "/tokens/{id}" and "id" in path_parameters:
        given = str(path_parameters["id"])
        if given == OWN_TOKEN or _coin(given):
            path_parameters["id"] = VICTIM_TOKEN
        return path_parameters
    for key, existing in EXISTING.items():
        if key in path_parameters and existing and _coin(path_parameters[key]):
            if method == "DELETE" and key == "id":
                continue
            path_parameters[key] = existing
    return path_parameters


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    _harmless(case.body)
