# Wraps the CMake presets. `make demo` and `make test` install what is missing and build first.
PRESET ?= release
BUILD  := build/$(PRESET)
JOBS   ?= $(shell nproc)

.PHONY: all deps configure build demo test test-asan test-tsan fuzz clean

all: build

deps:
	@tools/install-deps.sh

configure: deps
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build --preset $(PRESET) -j $(JOBS)

demo: build
	@$(BUILD)/bin/hetkern demo

# The whole suite, the offload schedules included (on the host without a GPU).
test: build
	@ctest --preset $(PRESET) -j $(JOBS)

# The suite again under AddressSanitizer and UndefinedBehaviorSanitizer (build/asan). The sanitizer
# presets leave the GPU plugin out: LeakSanitizer reports libomptarget's own allocations at exit,
# and the offload kernels' host fallback would double these suites' time for CPU code paths that
# the release suite already runs.
test-asan:
	@$(MAKE) --no-print-directory test PRESET=asan

# The whole suite again under ThreadSanitizer (build/tsan), with libomp's Archer tool so that
# OpenMP's own synchronization is understood (the tsan test preset sets the environment).
test-tsan:
	@$(MAKE) --no-print-directory test PRESET=tsan

# Every libFuzzer target of test/fuzz for FUZZ_SECONDS each (build/fuzz), starting from the seed
# corpus in the repository; prints the executions each ran and fails on any finding.
FUZZ_SECONDS ?= 60
fuzz: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build --preset fuzz -j $(JOBS)
	@test/fuzz/run.sh build/fuzz $(FUZZ_SECONDS)

clean:
	rm -rf build
