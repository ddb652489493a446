# The whole test suite; see scripts/test.sh.
.PHONY: test
test:
	./scripts/test.sh
