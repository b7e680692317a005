# SPDX-License-Identifier: GPL-2.0
#
# mdroute top-level Makefile: a thin front end.
#   make          build mdroute.ko for the installed Debian kernel, and user space
#   make check    all test layers (unit, KUnit, VM), ending "N passed, N failed"
#   make demo     the main job: boot a guest and show mdroute at work
#   make bench    the performance report (tools/bench/report) in build/bench/report
#                 (KVER=6.12: on that kernel; the report names the kernel)
#   make style    checkpatch on kmod/ and ktests/; make sparse: sparse on kmod/
# Kernel objects are described in Kbuild.

MDR_RELEASE := 0.1.0

# The Debian kernel to build against (tools/lib.sh, mdr_kver): the one
# linux-image-amd64 stands for, never `uname -r`. KVER= names another, or
# a series (KVER=6.12: the newest 6.12.* installed).
MDR_KVER = $(shell KVER='$(KVER)' bash -c '. tools/lib.sh && mdr_kver')
KDIR ?= /lib/modules/$(MDR_KVER)/build
BUILD ?= build
CMAKE_FLAGS := -DMDR_RELEASE=$(MDR_RELEASE) -DCMAKE_BUILD_TYPE=RelWithDebInfo
# ccache, when installed, compiles user space: a clean checkout (CI's)
# then recompiles only what changed since the cache last saw it. The
# cache's paths are taken relative to the tree, so two checkouts share
# it; debug info may then name the directory it was first built in.
# tools/check keeps the cache in $MDR_CACHE/ccache. CCACHE= turns it off.
CCACHE ?= $(shell command -v ccache 2>/dev/null)
ifneq ($(CCACHE),)
CMAKE_FLAGS += -DCMAKE_C_COMPILER_LAUNCHER=$(CCACHE) -DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE)
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_NOHASHDIR ?= 1
else
CMAKE_FLAGS += -UCMAKE_C_COMPILER_LAUNCHER -UCMAKE_CXX_COMPILER_LAUNCHER
endif
JOBS ?= $(shell nproc)

.PHONY: all module userspace userspace-release userspace-asan check demo bench \
	style sparse install dkms clean help

all: module userspace

module:
	@test -n "$(MDR_KVER)" || { echo "no Debian kernel found: run tools/install-deps" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) MDR_RELEASE=$(MDR_RELEASE) modules

userspace: userspace-release userspace-asan

# The release build: what is installed and benchmarked, and the programs
# VM tests run; the unit tests only in the build that runs them (below).
userspace-release:
	cmake -S userspace -B $(BUILD)/userspace $(CMAKE_FLAGS) -DMDR_UNIT_TESTS=OFF >/dev/null
	MAKEFLAGS= cmake --build $(BUILD)/userspace -j $(JOBS) -- --no-print-directory

# The build the tests use: AddressSanitizer and UBSan.
userspace-asan:
	cmake -S userspace -B $(BUILD)/userspace-asan $(CMAKE_FLAGS) -DMDR_SANITIZE=ON \
		-DMDR_TEST_HOOKS=ON -DMDR_UNIT_TESTS=ON >/dev/null
	MAKEFLAGS= cmake --build $(BUILD)/userspace-asan -j $(JOBS) -- --no-print-directory

check:
	tools/check

# Like check: what it needs first (a fresh machine has no kernel headers
# to build against), then what the demo runs (the module and the release
# build; not the sanitizer build, the longest of the three, which only
# tests use), then the demo.
demo:
	tools/install-deps
	$(MAKE) module userspace-release
	tools/demo

# Rounds and seconds per measurement; the machine is noisy, more rounds
# give steadier medians (about 12 x RUNTIME s a round under TCG).
BENCH_ROUNDS ?= 5
BENCH_RUNTIME ?= 10
bench: all
	tools/bench/report $(BENCH_ROUNDS) $(BENCH_RUNTIME)

style:
	tools/style checkpatch

sparse:
	tools/style sparse

install: all
	$(MAKE) -C $(KDIR) M=$(CURDIR) MDR_RELEASE=$(MDR_RELEASE) \
		$(if $(DESTDIR),INSTALL_MOD_PATH=$(DESTDIR)) modules_install
	install -D -m 0755 $(BUILD)/userspace/bin/mdctl $(DESTDIR)/usr/sbin/mdctl
	install -D -m 0644 userspace/mdctl/mdctl.8 $(DESTDIR)/usr/share/man/man8/mdctl.8
	install -D -m 0644 userspace/mdctl/mdctl.bash-completion \
		$(DESTDIR)/usr/share/bash-completion/completions/mdctl
	install -D -m 0755 $(BUILD)/userspace/bin/mdnode $(DESTDIR)/usr/sbin/mdnode
	install -D -m 0644 userspace/mdnode/mdnode.service $(DESTDIR)/lib/systemd/system/mdnode.service
	install -D -m 0644 userspace/mdnode/mdnode.conf.example $(DESTDIR)/etc/mdroute/mdnode.conf.example
	install -D -m 0644 tools/udev/60-mdroute.rules $(DESTDIR)/lib/udev/rules.d/60-mdroute.rules

# The module under DKMS, built for every installed kernel with headers.
dkms:
	tools/dkms/install

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -rf $(BUILD)

help:
	@sed -n '3,10p' Makefile | sed 's/^# \{0,1\}//'
