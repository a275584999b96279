# The two set-up commands of the README.
.PHONY: demo test
demo:
	python -m pip install -e ".[plot]" && symgen simulate stiff_pendulum --plot stiff_pendulum.png
test:
	python -m pip install -e ".[test,plot]" && python -m pytest -q
