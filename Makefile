# Wraps the CMake presets. `make demo` and `make test` install what is missing and build first.
PRESET ?= release
BUILD  := build/$(PRESET)
JOBS   ?= $(shell nproc)

.PHONY: all deps configure build demo test test-plain test-asan build-offload test-offload clean

all: build

deps:
	@tools/install-deps.sh

configure: deps
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build --preset $(PRESET) -j $(JOBS)

demo: build
	@$(BUILD)/bin/hetkern demo

# The suite of the plain build, then the same suite in the offload build (host fallback without a GPU).
test: test-plain test-offload

test-plain: build
	@ctest --preset $(PRESET) -j $(JOBS)

# The whole suite again under AddressSanitizer and UndefinedBehaviorSanitizer (build/asan).
test-asan:
	@$(MAKE) --no-print-directory test-plain PRESET=asan

# OpenMP target offload (build/offload; GPU architectures: HETKERN_OFFLOAD_ARCHS, sm_90 by default).
build-offload: deps
	@cmake --preset offload >/dev/null
	@cmake --build --preset offload -j $(JOBS)

test-offload: build-offload
	@ctest --preset offload -j $(JOBS)

clean:
	rm -rf build
