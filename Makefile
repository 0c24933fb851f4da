# Mercury: one Makefile for the BPF objects, mercuryd, the client library and the tests.
BUILD    ?= build
ARCH     ?= x86
CC       ?= gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
PKGS     := libbpf libnl-route-3.0 json-c

WARN     := -Wall -Wextra -Werror
CFLAGS   ?= -O2 -g
CFLAGS   += -std=c11 -D_GNU_SOURCE $(WARN) -Iinclude -Idaemon -I$(BUILD) \
            $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lelf -lz
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) $(WARN) -Ivmlinux/$(ARCH) -Iinclude -Ibpf

BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_OBJS   := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/%.bpf.o)
SKELS      := $(BPF_SRCS:bpf/%.bpf.c=$(BUILD)/%.skel.h)

DAEMON_SRCS := $(filter-out daemon/main.c,$(wildcard daemon/*.c))
DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(BUILD)/%.o)
UNIT_SRCS   := $(wildcard tests/unit/test_*.c)
UNIT_BINS   := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
BPFTEST_SRCS := $(wildcard tests/bpf/*.c)
BPFTEST_BINS := $(BPFTEST_SRCS:tests/bpf/%.c=$(BUILD)/tests/%)
BENCH_SRCS  := $(wildcard bench/*.c)
BENCH_BINS  := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

.PHONY: all deps test test-unit test-bpf test-integration bench format check-format clean vmlinux
all: $(BUILD)/mercuryd $(UNIT_BINS) $(BPFTEST_BINS) $(BENCH_BINS)

deps:
	scripts/deps.sh

vmlinux:
	scripts/gen-vmlinux.sh

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) include/mercury_abi.h | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BUILD)/daemon/%.o: daemon/%.c $(wildcard daemon/*.h include/*.h) | $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libmercuryd.a: $(DAEMON_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/mercuryd: $(BUILD)/daemon/main.o $(BUILD)/libmercuryd.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libmercuryd.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libmercuryd.a $(LDLIBS) -lcmocka

$(BUILD)/tests/%: tests/bpf/%.c $(BUILD)/libmercuryd.a $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libmercuryd.a $(LDLIBS) -lcmocka

$(BUILD)/bench/%: bench/%.c $(BUILD)/libmercuryd.a $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libmercuryd.a $(LDLIBS) -lm

$(BUILD):
	mkdir -p $@

test: all
	tests/run.sh all

test-unit: all
	tests/run.sh unit

test-bpf: all
	tests/run.sh bpf

test-integration: all
	tests/run.sh integration

bench: all
	bench/run.sh

FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' | grep -v '^vmlinux/')
format:
	clang-format -i $(FORMAT_SRCS)

check-format:
	clang-format --dry-run --Werror $(FORMAT_SRCS)

clean:
	rm -rf $(BUILD)
