# SPDX-License-Identifier: GPL-2.0
# xferk: kernel module, library, tools and tests. `make help` lists targets.

VERSION		:= 0.2.0
SOVERSION	:= 0

# The kernel to build the module against: the running kernel's build dir,
# else the newest installed Debian 6.1 headers.
KVER	?= $(shell uname -r)
KDIR	?= $(shell if [ -d /lib/modules/$(KVER)/build ]; then \
		echo /lib/modules/$(KVER)/build; else \
		ls -d /usr/src/linux-headers-6.1.0-*-amd64 2>/dev/null | sort -V | tail -n1; fi)

PREFIX	?= /usr/local
LIBDIR	?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR	?= $(PREFIX)/bin
UDEVDIR	?= /etc/udev/rules.d
MANDIR	?= $(PREFIX)/share/man
DOCDIR	?= $(PREFIX)/share/doc/xferk
PYTHONDIR ?= $(PREFIX)/lib/python3/dist-packages
DESTDIR	?=

CC	?= cc
AR	?= ar
CFLAGS	?= -O2 -g
XCFLAGS	:= -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Iuapi -Ilibxferk $(EXTRA_CFLAGS)

B	:= build
LIB_SO	:= $(B)/lib/libxferk.so.$(VERSION)
LIB_A	:= $(B)/lib/libxferk.a
LIB_PC	:= $(B)/lib/xferk.pc
TOOLS	:= $(patsubst tools/%.c,$(B)/bin/%,$(wildcard tools/*.c))
ITESTS	:= $(patsubst tests/%.c,$(B)/tests/%,$(wildcard tests/integration/*.c))
ISCRIPTS := $(patsubst tests/%.sh,$(B)/tests/%,$(wildcard tests/integration/*.sh))
THTESTS	:= $(patsubst tests/%.c,$(B)/tests/%,$(wildcard tests/twohost/*.c))
HELPERS	:= $(patsubst tests/%.c,$(B)/tests/%,$(wildcard tests/helpers/*.c))
DOUBLES	:= $(B)/tests/doubles/libcuda-vgem-double.so
UTESTS	:= $(patsubst tests/%.c,$(B)/tests/%,$(wildcard tests/unit/*.c)) \
	   $(patsubst tests/%.cc,$(B)/tests/%,$(wildcard tests/unit/*.cc))
USCRIPTS := $(patsubst tests/%.sh,$(B)/tests/%,$(wildcard tests/unit/*.sh))
EXAMPLES := $(patsubst libxferk/examples/%.c,$(B)/examples/%,$(wildcard libxferk/examples/*.c))
LIBHDRS	:= libxferk/libxferk.h libxferk/xferk_uring.h uapi/xferk.h
MANPAGES := $(wildcard man/*.[0-9])

# What DKMS needs to build the module with this Makefile's module target.
DKMS_SRC ?= /usr/src/xferk-$(VERSION)
DKMS_FILES := Kbuild Makefile dkms.conf kmod/Kbuild uapi/xferk.h \
	$(filter-out %.mod.c,$(wildcard kmod/*.[ch]))

.PHONY: all module lib tools tests examples install install-man dkms-src dkms-install \
	check check-quick demo bench fuzz repro lint clean help nixl nixl-install

all: module lib tools tests examples

help:
	@echo 'make            module (against KDIR=$(KDIR)), library, tools, tests'
	@echo 'make demo       two VMs on Debian 6.1: decode exports, prefill writes, next to ib_write_bw'
	@echo 'make bench      the benchmarks in qemu (stock kernel): ctrl, qos, bw vs perftest, moderation on/off, kernel vs nvme-rdma, nixlbench'
	@echo 'make fuzz       the uAPI fuzzer, XFERK_FUZZ_SECONDS (600) on each kernel'
	@echo 'make repro      reproductions of kernel bugs xferk works around (debug kernel, KASAN)'
	@echo 'make nixl       NIXL + UCX (NIXL_SRC_DIR, cached) and the NIXL plugin libplugin_XFERK.so'
	@echo 'make nixl-install  the NIXL plugin into the plugin directory of an installed NIXL'
	@echo 'make check      every test: host, KUnit (debug kernel), VM (stock + debug)'
	@echo 'make check-quick  for iteration: host stage, stock VM without NIXL, Python, cli, bench'
	@echo 'make install    module, library, headers, pkg-config, man pages, udev rule, Python package,'
	@echo '                the modprobe.d example'
	@echo '                (PREFIX, DESTDIR, LIBDIR, BINDIR, MANDIR, UDEVDIR, PYTHONDIR, DOCDIR)'
	@echo 'make install-man  only the man pages, $$(MANDIR)/man{3,4,8}, with a .so link per function'
	@echo 'make dkms-install the module sources to /usr/src/xferk-$(VERSION), then dkms add, build,'
	@echo '                install for KVER=$(KVER) (DKMS rebuilds it for later kernels)'

module:
	@test -n "$(KDIR)" || { echo 'no kernel build dir: install linux-headers-$$(uname -r) or set KDIR'; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

lib: $(LIB_SO) $(LIB_A) $(LIB_PC)
tools: $(TOOLS)
tests: $(ITESTS) $(ISCRIPTS) $(THTESTS) $(HELPERS) $(DOUBLES) $(UTESTS) $(USCRIPTS)
examples: $(EXAMPLES)

$(B)/lib/libxferk.o: libxferk/libxferk.c $(LIBHDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(XCFLAGS) -fPIC -fvisibility=hidden -c -o $@ $<

$(LIB_SO): $(B)/lib/libxferk.o libxferk/libxferk.map
	$(CC) $(CFLAGS) -shared -Wl,-soname,libxferk.so.$(SOVERSION) \
		-Wl,--version-script=libxferk/libxferk.map -o $@ $<
	ln -sf libxferk.so.$(VERSION) $(B)/lib/libxferk.so.$(SOVERSION)
	ln -sf libxferk.so.$(SOVERSION) $(B)/lib/libxferk.so

$(LIB_A): $(B)/lib/libxferk.o
	$(AR) rcs $@ $<

PC_SED	= sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	      -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|'

$(LIB_PC): libxferk/xferk.pc.in Makefile
	@mkdir -p $(@D)
	$(PC_SED) $< > $@

# Tools and integration programs link the static archive: they run
# unchanged inside the test VMs without a library path.
$(B)/bin/%: tools/%.c $(LIB_A) $(LIBHDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(XCFLAGS) -o $@ $< $(LIB_A) -luring -lm

$(B)/examples/%: libxferk/examples/%.c $(LIB_A) $(LIBHDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(XCFLAGS) -o $@ $< $(LIB_A) -luring

# Integration programs may speak rdma_cm themselves (a raw peer).
$(B)/tests/integration/%: tests/integration/%.c tests/integration/*.h $(LIB_A) $(LIBHDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(XCFLAGS) -o $@ $< $(LIB_A) -lpthread -luring -lrdmacm -libverbs

# Integration scripts (a test of a tool or a binding) run like the programs.
$(B)/tests/integration/%: tests/integration/%.sh
	@mkdir -p $(@D)
	install -m 0755 $< $@

# Helpers that integration scripts run: outside tests/integration/, so the
# harness does not run them as tests.
$(B)/tests/helpers/%: tests/helpers/%.c tests/integration/test_env.h $(LIB_A) $(LIBHDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(XCFLAGS) -Itests/integration -o $@ $< $(LIB_A) -luring

# Test doubles: shared objects a test loads in place of a library this
# machine lacks (the CUDA driver: tests/doubles/cuda_vgem.c).
$(B)/tests/doubles/libcuda-vgem-double.so: tests/doubles/cuda_vgem.c tests/integration/vgem.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(XCFLAGS) -shared -fPIC -o $@ $<

# Two-host programs (tests/twohost/*.sh run them in either VM).
$(B)/tests/twohost/%: tests/twohost/%.c tests/integration/test.h tests/integration/test_env.h $(LIB_A) $(LIBHDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(XCFLAGS) -Itests/integration -o $@ $< $(LIB_A) -lpthread -luring

$(B)/tests/unit/%: tests/unit/%.c tests/kunit/uapi_layout.h $(LIB_SO) $(LIBHDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(XCFLAGS) -o $@ $< -L$(B)/lib -Wl,-rpath,$(CURDIR)/$(B)/lib -lxferk -ldl

# The public headers as C++ sees them.
$(B)/tests/unit/%: tests/unit/%.cc $(LIBHDRS)
	@mkdir -p $(@D)
	$(CXX) $(CFLAGS) -std=c++20 -Wall -Wextra -pedantic -Iuapi -Ilibxferk $(EXTRA_CFLAGS) -o $@ $<

# The NIXL backend's device choice, which depends on nothing of NIXL.
$(B)/tests/unit/nixl_topo: tests/unit/nixl_topo.cc tests/unit/expect.h libxferk/nixl/plugin/xferk_topo.cpp libxferk/nixl/plugin/xferk_topo.h
	@mkdir -p $(@D)
	$(CXX) $(CFLAGS) -std=c++20 -Wall -Wextra -Ilibxferk/nixl/plugin $(EXTRA_CFLAGS) -o $@ $< libxferk/nixl/plugin/xferk_topo.cpp

# The NIXL backend's windows per request, which depend on nothing of NIXL.
$(B)/tests/unit/nixl_windows: tests/unit/nixl_windows.cc tests/unit/expect.h libxferk/nixl/plugin/xferk_windows.cpp libxferk/nixl/plugin/xferk_windows.h
	@mkdir -p $(@D)
	$(CXX) $(CFLAGS) -std=c++20 -Wall -Wextra -Iuapi -Ilibxferk/nixl/plugin $(EXTRA_CFLAGS) -o $@ $< libxferk/nixl/plugin/xferk_windows.cpp

# Unit scripts (host checks of the sources, e.g. the module's layers) run
# like the unit programs.
$(B)/tests/unit/%: tests/unit/%.sh
	@mkdir -p $(@D)
	install -m 0755 $< $@

# The udev rule gives /dev/xferk to group xferk, created here unless the
# install goes to a staging DESTDIR (a package creates it at its own install).
install: all install-man
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_PATH=$(DESTDIR) INSTALL_MOD_DIR=extra modules_install
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/xferk $(DESTDIR)$(BINDIR)
	install -m 0755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libxferk.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libxferk.so.$(SOVERSION)
	ln -sf libxferk.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libxferk.so
	install -m 0644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	$(PC_SED) libxferk/xferk.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/xferk.pc
	install -m 0644 $(LIBHDRS) $(DESTDIR)$(INCLUDEDIR)/xferk/
	install -m 0755 $(TOOLS) $(DESTDIR)$(BINDIR)/
	install -d $(DESTDIR)$(PYTHONDIR)/xferk
	install -m 0644 libxferk/python/xferk/*.py $(DESTDIR)$(PYTHONDIR)/xferk/
	install -d $(DESTDIR)$(UDEVDIR)
	install -m 0644 tools/60-xferk.rules $(DESTDIR)$(UDEVDIR)/
	install -d $(DESTDIR)$(DOCDIR)/examples
	install -m 0644 tools/xferk.modprobe.conf $(DESTDIR)$(DOCDIR)/examples/xferk.conf
	if [ -z "$(DESTDIR)" ] && ! getent group xferk >/dev/null; then \
		groupadd --system xferk; fi
	libxferk/nixl/install.sh --if-built

# NIXL core and UCX from NIXL_SRC_DIR (cached), and libplugin_XFERK.so.
nixl:
	libxferk/nixl/build.sh

# libplugin_XFERK.so into the plugin directory of the NIXL found
# (NIXL_PLUGIN_DIR, NIXL_PREFIX, Python's nixl or ldconfig's libnixl.so).
nixl-install:
	libxferk/nixl/install.sh

# Each page in man<section>, and for every other name of its NAME section
# (the functions it documents) a one-line page that sources it.
install-man:
	@set -e; for p in $(MANPAGES); do \
		s=$${p##*.}; n=$${p##*/}; d=$(DESTDIR)$(MANDIR)/man$$s; \
		install -d $$d; \
		echo "install -m 0644 $$p $$d/"; install -m 0644 $$p $$d/; \
		for a in $$(tools/man-names.sh $$p); do \
			[ "$$a.$$s" != "$$n" ] && [ ! -e man/$$a.$$s ] || continue; \
			echo ".so man$$s/$$n" > $$d/$$a.$$s; \
		done; \
	done

# DKMS: the module's sources in DKMS_SRC, registered, built and installed
# for KVER; DKMS rebuilds it for each kernel installed later (AUTOINSTALL).
# An earlier registration of this version is removed first.
dkms-src:
	install -d $(DKMS_SRC)
	tar cf - $(DKMS_FILES) | tar xf - -C $(DKMS_SRC)

dkms-install: dkms-src
	-dkms status -m xferk -v $(VERSION) | grep -q . && \
		dkms remove -m xferk -v $(VERSION) --all
	dkms add -m xferk -v $(VERSION)
	dkms build -m xferk -v $(VERSION) -k $(KVER)
	dkms install -m xferk -v $(VERSION) -k $(KVER)

# Host checks for the kernel sources: kernel coding style.
lint:
	tests/lint.sh

check:
	tests/check.sh

check-quick:
	tests/check.sh --quick

demo:
	tests/vm/run demo stock

bench:
	-libxferk/nixl/build.sh
	tests/vm/run bench stock
	XFERK_NIXL_UCX=1 tests/vm/run twohost stock '97_nixl'

fuzz:
	tests/vm/run fuzz stock
	tests/vm/run fuzz debug

repro:
	tests/vm/run repro debug

clean:
	-$(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null
	rm -rf $(B)
