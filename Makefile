# OpenSandbox in C: one non-recursive GNU make.
#   make          build everything into build/bin/ (needs only the build dependencies)
#   make test     format-check and banned-check, then build and run every suite;
#                 ends with "N passed, N failed"
#   make check    analyze, then the same suites under ASan+UBSan (build/san/)
#   make bench    run bench/ (BENCH_ARGS=--quick: smaller N; OSB_BENCH="create ...": only those)
#   make fuzz     build the libFuzzer targets (clang) into build/fuzz/
#   make install  the programs into $(DESTDIR)$(PREFIX)/bin (PREFIX=/usr/local), libopensandbox,
#                 its header and the man pages (osb.1, execd.1, opensandbox-server.8)
#   make deb      a Debian package with the systemd unit: $(BUILD)/opensandbox_<version>_<arch>.deb
#   make format / format-check / analyze / banned-check: the code habits (see docs/)
.SUFFIXES:
.DELETE_ON_ERROR:
SHELL := /bin/bash
ifeq ($(V),1)
Q :=
else
Q := @
endif

SAN ?=
ifeq ($(SAN),1)
BUILD ?= build/san
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
STATIC :=
else
BUILD ?= build
SANFLAGS :=
STATIC := -static
endif

CC ?= cc
CFLAGS ?= -O2 -g
WARN := -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes -Wformat=2 -Wno-format-nonliteral -Wno-format-truncation
CPPFLAGS := -D_GNU_SOURCE -Isrc -Iinclude -MMD -MP
ALL_CFLAGS := -std=gnu11 $(CFLAGS) $(WARN) $(SANFLAGS) $(CPPFLAGS)

# execd must run in any image: link the Debian static archives.
EXECD_LIBS := -l:libuv_a.a -l:libhttp_parser.a -l:libjansson.a -l:libz.a -lutil -lpthread -ldl -lm
TEST_LIBS := $(EXECD_LIBS)
INIT_LIBS := -l:libseccomp.a -l:libcap.a -l:libjansson.a
SERVER_LIBS := -luv -lhttp_parser -ljansson -lsqlite3 -larchive -lseccomp -lcap -lcurl -lnghttp2 -lssl -lcrypto -lnftnl -lmnl -lpthread -ldl -lm

COMMON_SRC := $(wildcard src/common/*.c)
HTTP_SRC := $(wildcard src/http/*.c)
EXECD_SRC := $(filter-out src/execd/main.c,$(wildcard src/execd/*.c))
# The runtime library (linked into the server) and the sandbox init helper
# (a small static program that builds one sandbox and execs execd in it).
RUNTIME_SRC := $(wildcard src/runtime/*.c src/runtime/native/*.c src/runtime/gvisor/*.c)
INIT_SRC := $(wildcard src/runtime/init/*.c) src/runtime/native/initspec.c
SERVER_SRC := $(filter-out src/server/main.c,$(wildcard src/server/*.c))
# The image store: OCI pulls, layers, image records (linked into the server).
IMAGE_SRC := $(wildcard src/image/*.c)
# Sandbox networking: netns/veth slots (netlink), nftables, DNS forwarder, egress policy.
NET_SRC := $(wildcard src/net/*.c)
# The credential vault: its model (bindings, matching, encrypted store), the
# per-server CA and the intercepting TLS proxy (linked into the server).
VAULT_SRC := $(wildcard src/vault/*.c)
# The C client library (lib/, public header include/osb/) and the two
# programs built only on it: osb (src/cli) and opensandbox-mcp (src/mcp).
# Its objects are position-independent with hidden visibility (only the
# OSBC_API names are exported from the .so); it borrows the WebSocket codec
# and what that needs.
LIB_SRC := $(wildcard lib/*.c) src/http/ws.c src/common/base64.c src/common/sha1.c \
    src/common/xalloc.c src/common/err.c
CLI_SRC := $(wildcard src/cli/*.c)
MCP_SRC := $(wildcard src/mcp/*.c)
# The clients link the system's C library dynamically and everything else
# statically: no libcurl or libssl.so to load, so `osb` starts in about a
# millisecond (TLS code is only touched for https). -no-pie: a PIE of this
# size spends more time on start-up relocations than on the request itself.
CLIENT_LDFLAGS := -no-pie
CLIENT_LIBS := -l:libjansson.a -l:libhttp_parser.a -l:libssl.a -l:libcrypto.a -ldl -lpthread -lm
LIB_SO_LIBS := -ljansson -lhttp_parser -lssl -lcrypto

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
COMMON_OBJ := $(call obj,$(COMMON_SRC))
HTTP_OBJ := $(call obj,$(HTTP_SRC))
EXECD_OBJ := $(call obj,$(EXECD_SRC))
RUNTIME_OBJ := $(call obj,$(RUNTIME_SRC))
INIT_OBJ := $(call obj,$(INIT_SRC))
# The OpenAPI document GET /openapi.json serves, built into the server
# (scripts/gen-openapi.py writes the JSON from docs/specs/ and
# src/server/openapi/extensions.yml; the build only embeds its bytes).
OPENAPI_JSON := src/server/openapi/openapi.json
OPENAPI_C := $(BUILD)/gen/openapi_json.c
# The web console: console/src plus the npm packages pinned in
# console/package-lock.json, bundled by scripts/build-console.sh into
# $(BUILD)/console and embedded like the OpenAPI document.
CONSOLE_DIR := $(BUILD)/console
CONSOLE_FILES := index.html app.js app.css vendor.js vendor.css
CONSOLE_C := $(BUILD)/gen/console_assets.c
SERVER_OBJ := $(call obj,$(SERVER_SRC) $(OPENAPI_C) $(CONSOLE_C))
IMAGE_OBJ := $(call obj,$(IMAGE_SRC))
NET_OBJ := $(call obj,$(NET_SRC))
VAULT_OBJ := $(call obj,$(VAULT_SRC))
LIB_OBJ := $(patsubst %.c,$(BUILD)/pic/%.o,$(LIB_SRC))
CLI_OBJ := $(call obj,$(CLI_SRC))
MCP_OBJ := $(call obj,$(MCP_SRC))
LIB_A := $(BUILD)/lib/libopensandbox.a
LIB_SO := $(BUILD)/lib/libopensandbox.so.0

UNIT_SRC := $(wildcard tests/unit/*/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
HELPER_BIN := $(patsubst tests/helpers/%.c,$(BUILD)/tests/helpers/%,$(wildcard tests/helpers/*.c))

# `make` installs what compiling needs; the test targets add the test tools.
DEPS_STAMP := build/.deps-build-ok
TEST_DEPS_STAMP := build/.deps-test-ok

.PHONY: all test test-build check bench fuzz clean deps test-deps install deb
.PHONY: format format-check analyze banned-check
BINS := $(BUILD)/bin/execd
ifneq ($(wildcard src/runtime/init/main.c),)
BINS += $(BUILD)/bin/osb-sandbox-init
endif
ifneq ($(wildcard src/server/main.c),)
BINS += $(BUILD)/bin/opensandbox-server
endif
ifneq ($(CLI_SRC),)
BINS += $(BUILD)/bin/osb
endif
ifneq ($(MCP_SRC),)
BINS += $(BUILD)/bin/opensandbox-mcp
endif
all: $(BINS) $(LIB_A) $(LIB_SO) $(BUILD)/bin/osb-example

$(DEPS_STAMP): scripts/install-deps.sh
	@./scripts/install-deps.sh build
	@mkdir -p $(@D) && touch $@
$(TEST_DEPS_STAMP): scripts/install-deps.sh
	@./scripts/install-deps.sh test
	@mkdir -p $(@D) && touch $@
deps: $(DEPS_STAMP)
test-deps: $(TEST_DEPS_STAMP)

$(BUILD)/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) $(OBJ_DEFS) -c $< -o $@

$(BUILD)/pic/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<  (pic)")
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

# --version: the VERSION file plus the commit. The stamp is rewritten only
# when that string changes, so version.o (alone) rebuilds exactly then.
OSB_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null)
VERSION_STRING := $(strip $(file <VERSION))$(if $(OSB_COMMIT), (git $(OSB_COMMIT)))
VERSION_STAMP := $(BUILD)/version.stamp
$(shell mkdir -p $(BUILD) && { [ "$$(cat $(VERSION_STAMP) 2>/dev/null)" = '$(VERSION_STRING)' ] || echo '$(VERSION_STRING)' >$(VERSION_STAMP); })
$(BUILD)/obj/src/common/version.o: $(VERSION_STAMP)
$(BUILD)/obj/src/common/version.o: OBJ_DEFS = -DOSB_VERSION='"$(VERSION_STRING)"'

$(OPENAPI_C): $(OPENAPI_JSON) scripts/embed.sh
	@mkdir -p $(@D)
	@$(if $(Q),echo "  EMBED   $<")
	$(Q)sh scripts/embed.sh osb_openapi_json $< server/apidocs.h >$@

$(CONSOLE_DIR)/.built: console/package.json console/package-lock.json $(wildcard console/src/*) scripts/build-console.sh | $(DEPS_STAMP)
	@$(if $(Q),echo "  CONSOLE $(CONSOLE_DIR)")
	$(Q)sh scripts/build-console.sh $(CONSOLE_DIR)
	@touch $@

$(CONSOLE_C): $(CONSOLE_DIR)/.built scripts/embed.sh
	@mkdir -p $(@D)
	@$(if $(Q),echo "  EMBED   $(CONSOLE_DIR)")
	$(Q)for f in $(CONSOLE_FILES); do \
	    sh scripts/embed.sh osb_console_$$(echo $$f | tr . _) $(CONSOLE_DIR)/$$f server/console.h || exit 1; \
	done >$@.tmp && mv $@.tmp $@

$(BUILD)/bin/execd: $(BUILD)/obj/src/execd/main.o $(EXECD_OBJ) $(HTTP_OBJ) $(COMMON_OBJ)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(STATIC) -o $@ $^ $(EXECD_LIBS)

$(BUILD)/bin/osb-sandbox-init: $(INIT_OBJ) $(COMMON_OBJ)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(STATIC) -o $@ $^ $(INIT_LIBS)

$(BUILD)/bin/opensandbox-server: $(BUILD)/obj/src/server/main.o $(SERVER_OBJ) $(RUNTIME_OBJ) $(IMAGE_OBJ) $(VAULT_OBJ) $(NET_OBJ) $(HTTP_OBJ) $(COMMON_OBJ)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(SERVER_LIBS)

$(LIB_A): $(LIB_OBJ)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^
$(LIB_SO): $(LIB_OBJ)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,libopensandbox.so.0 -Wl,--no-undefined -o $@ $^ $(LIB_SO_LIBS)
	$(Q)ln -sf libopensandbox.so.0 $(@D)/libopensandbox.so
$(BUILD)/bin/osb: $(CLI_OBJ) $(COMMON_OBJ) $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(CLIENT_LDFLAGS) -o $@ $(CLI_OBJ) $(COMMON_OBJ) $(LIB_A) $(CLIENT_LIBS)
$(BUILD)/bin/opensandbox-mcp: $(MCP_OBJ) $(COMMON_OBJ) $(LIB_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(CLIENT_LDFLAGS) -o $@ $(MCP_OBJ) $(COMMON_OBJ) $(LIB_A) $(CLIENT_LIBS)
# The example is built against the shared library, as a user would.
$(BUILD)/bin/osb-example: examples/osb_example.c $(LIB_SO)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) -std=c11 $(CFLAGS) $(WARN) $(SANFLAGS) -Iinclude -o $@ $< -L$(BUILD)/lib -l:libopensandbox.so -Wl,-rpath,'$$ORIGIN/../lib'

# Unit tests: one binary per tests/unit/<module>/test_*.c, linked with the
# objects of its module and the modules below it, so a test may call any
# exported function.
UNIT_LINK = $(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $^ $(TEST_LIBS)
$(BUILD)/tests/common/%: tests/unit/common/%.c $(COMMON_OBJ) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(UNIT_LINK)
$(BUILD)/tests/http/%: tests/unit/http/%.c $(HTTP_OBJ) $(COMMON_OBJ) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(UNIT_LINK)
$(BUILD)/tests/image/%: tests/unit/image/%.c $(IMAGE_OBJ) $(COMMON_OBJ) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $^ $(SERVER_LIBS)
$(BUILD)/tests/net/%: tests/unit/net/%.c $(NET_OBJ) $(HTTP_OBJ) $(COMMON_OBJ) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $^ $(SERVER_LIBS)
$(BUILD)/tests/runtime/%: tests/unit/runtime/%.c $(RUNTIME_OBJ) $(IMAGE_OBJ) $(HTTP_OBJ) $(COMMON_OBJ) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $^ $(SERVER_LIBS)
$(BUILD)/tests/vault/%: tests/unit/vault/%.c $(VAULT_OBJ) $(NET_OBJ) $(HTTP_OBJ) $(COMMON_OBJ) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $^ $(SERVER_LIBS)
$(BUILD)/tests/server/%: tests/unit/server/%.c $(SERVER_OBJ) $(RUNTIME_OBJ) $(IMAGE_OBJ) $(VAULT_OBJ) $(NET_OBJ) $(HTTP_OBJ) $(COMMON_OBJ) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $^ $(SERVER_LIBS)
$(BUILD)/tests/execd/%: tests/unit/execd/%.c $(EXECD_OBJ) $(HTTP_OBJ) $(COMMON_OBJ) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(UNIT_LINK)

$(BUILD)/tests/lib/%: tests/unit/lib/%.c $(LIB_A) | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -Iinclude -Ilib -Itests/unit -o $@ $^ $(CLIENT_LIBS)

$(BUILD)/tests/helpers/%: tests/helpers/%.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(STATIC) -o $@ $<

# The static checks come first, so unformatted code fails before the long run.
test: | $(TEST_DEPS_STAMP)
	@$(MAKE) --no-print-directory format-check banned-check
	@$(MAKE) --no-print-directory test-build
	@BUILD=$(BUILD) ./tests/run.sh
test-build: all $(UNIT_BIN) $(HELPER_BIN) fuzz

check: | $(TEST_DEPS_STAMP)
	@$(MAKE) --no-print-directory analyze
	@$(MAKE) --no-print-directory SAN=1 test

bench: all $(UNIT_BIN) $(HELPER_BIN) | $(TEST_DEPS_STAMP)
	@BUILD=$(BUILD) ./bench/run.sh $(BENCH_ARGS)

# ---- code habits ----
# clang-format with the checked-in .clang-format; `make format` rewrites.
FORMAT_FILES = $(shell find src lib include examples fuzz tests/unit tests/helpers -name '*.[ch]' 2>/dev/null | sort)
format-check: | $(TEST_DEPS_STAMP)
	@out=$$(clang-format --style=file --dry-run --Werror $(FORMAT_FILES) 2>&1); rc=$$?; \
	bad=$$(echo "$$out" | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' | sort -u); \
	if [ -n "$$bad" ]; then \
	    echo "format-check: $$(echo "$$bad" | wc -l) file(s) differ from .clang-format (make format rewrites them):"; \
	    echo "$$bad" | sed 's/^/  /'; exit 1; \
	elif [ $$rc != 0 ]; then echo "$$out" | head -20; exit 1; fi
format: | $(TEST_DEPS_STAMP)
	$(Q)clang-format --style=file -i $(FORMAT_FILES)

banned-check:
	@/usr/bin/python3 scripts/check-banned.py

# The clang static analyzer over every source, one stamp per file so that
# only changed files are analyzed again. Any report fails (the log is kept
# next to the stamp). Build with the project's own flags and warnings.
ANALYZE_SRC := $(sort $(shell find src lib -name '*.c'))
# deadcode.DeadStores is off: it does not see that the cleanup attribute
# (_cleanup_free_, _cleanup_close_) reads a variable, so it reports every
# `fd = -1` that hands ownership on; the compiler's -Wunused-but-set-variable
# still catches the real dead stores. (err.h explains __clang_analyzer__.)
ANALYZE_FLAGS := -std=gnu11 $(WARN) -D_GNU_SOURCE -Isrc -Iinclude -Xanalyzer -analyzer-disable-checker=deadcode.DeadStores
analyze: $(patsubst %.c,build/analyze/%.ok,$(ANALYZE_SRC))
	@echo "analyze: $(words $(ANALYZE_SRC)) files, no report"
build/analyze/%.ok: %.c | $(TEST_DEPS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  ANALYZE $<")
	$(Q)clang --analyze -Xanalyzer -analyzer-output=text $(ANALYZE_FLAGS) -MMD -MP -MF $(@:.ok=.d) -MT $@ \
	    $< -o /dev/null >$(@:.ok=.log) 2>&1 || { cat $(@:.ok=.log); exit 1; }
	@if grep -q 'warning:' $(@:.ok=.log); then cat $(@:.ok=.log); exit 1; fi
	@touch $@

# ---- install ----
# The server looks for execd and osb-sandbox-init next to its own binary
# (runtime.execd_path / runtime.init_path in the config), so the programs go
# to one directory; the client library, its header and osb's man page to
# their usual places.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR := $(PREFIX)/bin
DOCDIR := $(PREFIX)/share/doc/opensandbox
LIBDIR := $(PREFIX)/lib
INCDIR := $(PREFIX)/include
MANDIR := $(PREFIX)/share/man
INSTALL_DOCS := README.md $(filter-out docs/README.md,$(wildcard docs/*.md))
install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(DOCDIR) $(DESTDIR)$(LIBDIR) \
	    $(DESTDIR)$(INCDIR)/osb $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8
	install -m 0755 $(BINS) $(DESTDIR)$(BINDIR)/
	install -m 0644 $(INSTALL_DOCS) $(DESTDIR)$(DOCDIR)/
	install -m 0644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 0755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libopensandbox.so.0 $(DESTDIR)$(LIBDIR)/libopensandbox.so
	install -m 0644 include/osb/opensandbox.h $(DESTDIR)$(INCDIR)/osb/
	install -m 0644 docs/osb.1 docs/execd.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 docs/opensandbox-server.8 $(DESTDIR)$(MANDIR)/man8/

# A Debian package of everything `make install` puts in place (PREFIX=/usr),
# with the systemd unit, the service's config and maintainer scripts
# (packaging/, scripts/make-deb.sh; dpkg-deb, no debhelper):
# $(BUILD)/opensandbox_<version>_<arch>.deb.
DEB_STAGE := $(BUILD)/deb/root
deb: all
	$(Q)rm -rf $(BUILD)/deb
	$(Q)$(MAKE) --no-print-directory -s install DESTDIR=$(abspath $(DEB_STAGE)) PREFIX=/usr >/dev/null
	$(Q)sh scripts/make-deb.sh $(DEB_STAGE) $(BUILD)

FUZZ_SRC := $(wildcard fuzz/fuzz_*.c)
FUZZ_LIB_SRC := $(COMMON_SRC) $(HTTP_SRC)
fuzz: $(patsubst fuzz/%.c,build/fuzz/%,$(FUZZ_SRC))
# Targets that #include a src/net, src/server or src/runtime source rebuild when it changes; those
# sources are not linked (filtered out of $^ below).
build/fuzz/fuzz_policy: $(wildcard src/net/policy.[ch])
build/fuzz/fuzz_dns: $(wildcard src/net/dnsmsg.[ch])
build/fuzz/fuzz_create_spec: $(wildcard src/server/spec.[ch] src/server/apierr.[ch] src/net/policy.[ch])
build/fuzz/fuzz_initspec: $(wildcard src/runtime/native/initspec.c src/runtime/init/spec.h)
build/fuzz/fuzz_tlshello: $(wildcard src/vault/tlshello.[ch])
build/fuzz/fuzz_h2: $(wildcard src/vault/h2.[ch] src/vault/h1.[ch] src/vault/vio.[ch])
build/fuzz/fuzz_h2: FUZZ_LIBS := -lnghttp2 -lssl -lcrypto
build/fuzz/%: fuzz/%.c $(FUZZ_LIB_SRC) | $(TEST_DEPS_STAMP)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  FUZZ    $@")
	$(Q)clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined $(CPPFLAGS) -o $@ $(filter-out src/net/% src/server/% src/runtime/% src/vault/%,$^) $(TEST_LIBS) $(FUZZ_LIBS)

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj build/analyze -name '*.d' 2>/dev/null)
