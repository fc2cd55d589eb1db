"""The Spark task's profiles sealed (``throttled_admin.spark._sealed``): shipped to a fresh Python worker as Spark
ships a task's function (PySpark's cloudpickle), with no secret in the pickle. No Spark session: the pickle alone."""

from __future__ import annotations

import subprocess
import sys

from tests.support import REPO

_DUMP_A_TASK = """
import sys
from pyspark import cloudpickle
from throttled_admin.provisioning import Profile
from throttled_admin.spark._task import make_task

def on_error(error):  # a notebook's or a script's callback: it lives in __main__
    pass

conf = {"bootstrap.servers": "b:9092", "sasl.password": "hunter2-hunter2", "error_cb": on_error}
profiles = {"c": Profile("c", conf), "d": Profile("d", {**conf, "error_cb": lambda error: None})}
sys.stdout.buffer.write(cloudpickle.dumps(make_task(profiles, False, False, 1)))
"""
_LOAD_THE_TASK = """
import pickle, sys
task = pickle.loads(sys.stdin.buffer.read())
[sealed] = [cell.cell_contents for cell in task.__closure__ if type(cell.cell_contents).__name__ == "Sealed"]
print(sorted((name, callable(p.conf["error_cb"])) for name, p in sealed.open().items()))
"""


def test_a_tasks_sealed_profiles_carry_callbacks_of_main_and_lambdas_to_a_fresh_worker() -> None:
    """Review 130: sealed with the standard pickle, a profile's lambda could not be pickled, and a callback defined in
    ``__main__`` went by reference, which an executor's Python worker (its own ``__main__``) cannot load. Spark's
    cloudpickle seals them by value, as it shipped them unsealed; the pickle still shows no password."""
    dumped = subprocess.run([sys.executable, "-c", _DUMP_A_TASK], capture_output=True, timeout=60, cwd=REPO)
    assert dumped.returncode == 0, dumped.stderr.decode()[-2000:]
    assert b"hunter2-hunter2" not in dumped.stdout
    loaded = subprocess.run(
        [sys.executable, "-c", _LOAD_THE_TASK], input=dumped.stdout, capture_output=True, timeout=60, cwd=REPO
    )
    assert loaded.returncode == 0, loaded.stderr.decode()[-2000:]
    assert loaded.stdout.decode().strip() == "[('c', True), ('d', True)]"
