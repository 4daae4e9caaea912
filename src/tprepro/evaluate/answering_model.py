"""The code of tprepro's MLflow model (MLflow's models-from-code): `mlflow.pyfunc.load_model` runs the
copy of this file stored with the model, which builds the model from the installed tprepro, instead of
unpickling a stored object (evaluate/pyfunc.py saves it). It runs only if its sha256 is the one recorded
when the model was logged (pyfunc._load_pyfunc checks it first); the MLmodel file that records it is
trusted, as MLflow trusts it (see evaluate/pyfunc.py: what loading trusts)."""

from mlflow.models import set_model

from tprepro.evaluate.pyfunc import AnsweringModel

set_model(AnsweringModel())
