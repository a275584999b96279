# The two set-up commands of the README, and the API reference (docs/api → docs/_build/html).
.PHONY: demo test docs
demo:
	python -m pip install -e ".[plot]" && symgen simulate stiff_pendulum --plot stiff_pendulum.png
test:
	python -m pip install -e ".[test,plot]" && python -m pytest -q -n auto --dist loadfile && OPENBLAS_CORETYPE=Prescott python -m pytest -q -n auto --dist loadfile -m roundoff
docs:
	python -m pip install -e ".[docs]" && python -m sphinx -W -q -b html docs/api docs/_build/html
