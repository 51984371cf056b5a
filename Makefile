# Wraps the CMake presets. `make demo` and `make test` install what is missing and build first.
PRESET ?= release
BUILD  := build/$(PRESET)
JOBS   ?= $(shell nproc)

.PHONY: all deps configure build demo test test-asan clean

all: build

deps:
	@tools/install-deps.sh

configure: deps
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build --preset $(PRESET) -j $(JOBS)

demo: build
	@$(BUILD)/bin/hetkern demo

test: build
	@ctest --preset $(PRESET) -j $(JOBS)

# The whole suite again under AddressSanitizer and UndefinedBehaviorSanitizer (build/asan).
test-asan:
	@$(MAKE) --no-print-directory test PRESET=asan

clean:
	rm -rf build
