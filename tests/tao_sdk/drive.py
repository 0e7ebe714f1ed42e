"""Drives Jobdeck through NVIDIA's TAO SDK (its Lepton platform), as a user's
program would: every call seed 002 names, against the server named by
LEPTON_WORKSPACE_URL. Run by tests/tao_sdk.rs in the pinned venv
tests/.tao-venv; prints one JSON object per step on stdout ("step", "result")
and fails (exit 1) on any answer outside 2xx the SDK received, or on any
broken expectation.

Usage: python drive.py <scenario> [args...]
"""

import json
import os
import sys
import time

import requests

# Every HTTP answer the SDK and leptonai receive, to fail on any non-2xx.
ANSWERS = []
_send = requests.Session.send


def _recording_send(self, request, **kwargs):
    response = _send(self, request, **kwargs)
    ANSWERS.append((request.method, request.url, response.status_code, response.text[:300]))
    return response


requests.Session.send = _recording_send

import tao_sdk.platforms.lepton.handler as handler  # noqa: E402

# The SDK's one hard-coded constant: its own HTTP calls go to the gateway
# form of the API under this base URL.
handler.LEPTON_API_BASE_URL = os.environ["JOBDECK_BASE_URL"]

from tao_sdk.platforms.lepton import LeptonSDK  # noqa: E402


def emit(step, result):
    print(json.dumps({"step": step, "result": result}, default=str), flush=True)


def fail(message):
    print(json.dumps({"error": message}), flush=True)
    sys.exit(1)


def check_answers():
    bad = [a for a in ANSWERS if not 200 <= a[2] < 300]
    if bad:
        fail(f"non-2xx answers: {bad}")
    if not ANSWERS:
        fail("the SDK sent no request at all")


def wait_status(sdk, job_id, wanted, limit=120):
    """Polls get_job_status until it says one of `wanted`."""
    deadline = time.time() + limit
    seen = None
    while time.time() < deadline:
        seen = sdk.get_job_status(job_id).status
        if seen in wanted:
            return seen
        time.sleep(0.2)
    fail(f"job {job_id} never reached {wanted}; last status {seen}")


def main():
    scenario = sys.argv[1]
    args = sys.argv[2:]
    sdk = LeptonSDK(poll_interval=1, state_file=os.path.join(os.getcwd(), "tao_session_state.json"))
    # No request may leave the machine: the multi-node bootstrap's wget goes
    # through a proxy on a closed loopback port and fails at once.
    offline = {"http_proxy": os.environ["JOBDECK_CLOSED_PROXY"], "https_proxy": os.environ["JOBDECK_CLOSED_PROXY"]}
    if scenario == "discover":
        emit("list_resource_shapes", sdk.list_resource_shapes())
        emit("get_volumes", sdk.get_volumes())
        for volume in args:
            emit("get_storage_permissions", sdk.get_storage_permissions(volume, "local"))
    elif scenario == "complete":
        command = args[0]
        job = sdk.create_job(image="nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt", command=command, gpu_count=1, env_vars=offline)
        emit("create_job", {"id": job.id, "backend_job_id": job.backend_job_id})
        emit("status", wait_status(sdk, job.id, {"Complete", "Error"}))
        emit("get_job_logs", sdk.get_job_logs(job.id, tail=int(args[1])))
        emit("get_job_replicas", sdk.get_job_replicas(job.id))
    elif scenario == "multinode":
        job = sdk.create_job(
            image="nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt",
            command=args[0],
            gpu_count=1,
            num_nodes=2,
            env_vars=offline,
        )
        emit("create_job", {"id": job.id, "backend_job_id": job.backend_job_id})
        emit("status", wait_status(sdk, job.id, {"Complete", "Error"}))
        emit("get_job_logs", sdk.get_job_logs(job.id))
        emit("get_job_replicas", sdk.get_job_replicas(job.id))
    elif scenario == "fail":
        job = sdk.create_job(image="nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt", command=args[0], gpu_count=1, env_vars=offline)
        emit("create_job", {"id": job.id, "backend_job_id": job.backend_job_id})
        emit("status", wait_status(sdk, job.id, {"Complete", "Error"}))
        emit("get_failure_analysis", sdk.get_failure_analysis(job.id))
    elif scenario == "cancel":
        job = sdk.create_job(image="nvcr.io/nvidia/tao/tao-toolkit:6.26.3-pyt", command=args[0], gpu_count=1, env_vars=offline)
        emit("create_job", {"id": job.id, "backend_job_id": job.backend_job_id})
        # Running means the replica started; the test then waits for the file
        # the command writes before it asks for the cancel.
        emit("status", wait_status(sdk, job.id, {"Running"}))
        deadline = time.time() + 120
        while not os.path.exists(args[1]):
            if time.time() > deadline:
                fail(f"the job never wrote {args[1]}")
            time.sleep(0.1)
        emit("cancel_job", sdk.cancel_job(job.id))
    elif scenario == "delete-by-name":
        # The SDK's handler deletes by the name it gave the job.
        emit("delete", sdk._handler.delete(args[0]))
    else:
        fail(f"unknown scenario {scenario}")
    check_answers()
    emit("answers", [f"{m} {u.split('?')[0]} {s}" for m, u, s, _ in ANSWERS])


if __name__ == "__main__":
    main()
