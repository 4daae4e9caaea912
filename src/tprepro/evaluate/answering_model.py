"""The code of tprepro's MLflow model (MLflow's models-from-code): `mlflow.pyfunc.load_model` runs this
file, which builds the model from the installed tprepro, instead of unpickling a stored object, so a
swapped artifact cannot run code as it loads (evaluate/pyfunc.py saves it)."""

from mlflow.models import set_model

from tprepro.evaluate.pyfunc import AnsweringModel

set_model(AnsweringModel())
