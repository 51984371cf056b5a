# Wraps the CMake presets. `make demo` and `make test` install what is missing and build first.
PRESET ?= release
BUILD  := build/$(PRESET)
JOBS   ?= $(shell nproc)

.PHONY: all deps configure build demo test test-plain test-asan test-tsan build-offload test-offload fuzz clean

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

# The whole suite again under ThreadSanitizer (build/tsan), with libomp's Archer tool so that
# OpenMP's own synchronization is understood (the tsan test preset sets the environment).
test-tsan:
	@$(MAKE) --no-print-directory test-plain PRESET=tsan

# Every libFuzzer target of test/fuzz for FUZZ_SECONDS each (build/fuzz), starting from the seed
# corpus in the repository; prints the executions each ran and fails on any finding.
FUZZ_SECONDS ?= 60
fuzz: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build --preset fuzz -j $(JOBS)
	@test/fuzz/run.sh build/fuzz $(FUZZ_SECONDS)

clean:
	rm -rf build
