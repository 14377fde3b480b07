# labpool — `make run` opens the window, `make test` runs every test.
.DEFAULT_GOAL := help
SHELL := bash
.SHELLFLAGS := -o pipefail -euc
.DELETE_ON_ERROR:

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X main.version=$(VERSION)
GUI_TAGS  := production,webkit2_41
APT_PKGS  := build-essential pkg-config libgtk-3-dev libwebkit2gtk-4.1-dev xvfb xauth \
             iproute2 chromium imagemagick jq curl docker.io busybox-static docker-registry desktop-file-utils prometheus \
             slurm-wlm munge sudo mmdebstrap $(ARM64_APT)
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
FRONTEND_SRC := $(shell find frontend/src frontend/index.html frontend/package.json frontend/vite.config.ts -type f 2>/dev/null)
GO_SRC    := $(shell find . -name '*.go' -not -path './frontend/*' 2>/dev/null) go.mod go.sum
# linux/arm64 (DGX Spark, GB300 stations, Grace, Jetson): cross-built with Debian's gcc for
# cgo (NVML), its tests run under qemu-user through binfmt_misc (make arm64-test).
ARM64_APT  := gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user qemu-user-binfmt
ARM64_ENV  := GOOS=linux GOARCH=arm64 CGO_ENABLED=1 CC=aarch64-linux-gnu-gcc
ARM64_LIBC := /usr/aarch64-linux-gnu
MOCKNVML   ?= ../shared/mocknvml
# The packages that touch the OS or cgo: NVML (against the arm64 build of NVIDIA's mock), /proc,
# SQLite (modernc), keys and certificates, QUIC sockets, mDNS. qemu-user cannot join a multicast
# group for the program it runs, so the tests that join one (mDNS across namespaces, beside an
# OS responder) run on amd64 only (the same code:
# TestNoArchCode). -short: the long property and load tests of sync/store and sync/peer take
# minutes under emulation (190 s and 110 s) and run on amd64.
ARM64_PKGS := ./node/gpu ./node/host ./sync/store ./sync/peer ./sync/transport ./discovery
ARM64_SKIP := ^(TestDiscovery(AcrossNamespaces|IPv4Only)|TestCoexistsWithResponder)$$
# Every package but app/e2e, whose tests drive the real binaries (built by `make agent`) in
# network namespaces and run without -race. Expanded only where a recipe uses it.
UNIT_PKGS  = $(shell $(GO) list ./... | grep -v /app/e2e)

.PHONY: help
help: ## show this help
	@grep -hE '^[a-z][a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

.PHONY: deps
deps: .deps-apt frontend/node_modules/.package-lock.json ## install what is missing (apt and npm packages)

# Slurm's and munge's services, when this installs them, are disabled: the tests start their
# own clusters (node/slurm/slurmtest), and a machine's own cluster is left alone.
.deps-apt: Makefile
	@missing=$$(for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	  case " $$missing " in *" slurm-wlm "*) $(SUDO) systemctl disable --now slurmctld slurmd >/dev/null 2>&1 || true;; esac; \
	  case " $$missing " in *" munge "*) $(SUDO) systemctl disable --now munge >/dev/null 2>&1 || true;; esac; \
	fi
	@touch $@

frontend/node_modules/.package-lock.json: frontend/package.json frontend/package-lock.json
	cd frontend && npm ci --no-audit --no-fund

frontend/dist/index.html: frontend/node_modules/.package-lock.json $(FRONTEND_SRC)
	cd frontend && npm run build

.PHONY: frontend
frontend: frontend/dist/index.html ## build the UI into frontend/dist

build/bin/labpool: frontend/dist/index.html $(GO_SRC) build/linux/labpool.png
	CGO_ENABLED=1 $(GO) build -tags $(GUI_TAGS) -ldflags '$(LDFLAGS)' -o $@ .

# The window starts its background agent from the headless build beside it (agentbin.go):
# no GTK/WebKit in the agent, which then costs what `labpool agent` costs.
build/bin/labpool-agent: frontend/dist/index.html $(GO_SRC)
	CGO_ENABLED=1 $(GO) build -tags headless -ldflags '$(LDFLAGS)' -o $@ .

.PHONY: desktop
desktop: .deps-apt build/bin/labpool build/bin/labpool-agent ## build the desktop app (window, and the headless agent it starts) into build/bin

.PHONY: run
run: desktop ## install what is missing, build and open the labpool window
	./build/bin/labpool

bin/labpool: frontend/dist/index.html $(GO_SRC)
	CGO_ENABLED=1 $(GO) build -tags headless -ldflags '$(LDFLAGS)' -o $@ .

bin/labpool-arm64: frontend/dist/index.html $(GO_SRC)
	$(ARM64_ENV) $(GO) build -tags headless -ldflags '$(LDFLAGS)' -o $@ .

# binfmt_misc runs an arm64 program through qemu-aarch64 (test binaries re-exec themselves, agents
# start in namespaces). With no systemd to register it, it is registered here, once per boot.
.PHONY: binfmt-arm64
binfmt-arm64:
	@mountpoint -q /proc/sys/fs/binfmt_misc || $(SUDO) mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
	@[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || $(SUDO) sh -c 'cat /usr/lib/binfmt.d/qemu-aarch64.conf > /proc/sys/fs/binfmt_misc/register'

# The arm64 mock NVML with the mock's profiles beside it, as gputest.FindMock looks for them.
bin/arm64-nvml: $(wildcard $(MOCKNVML)/arm64/*)
	@test -d "$(MOCKNVML)/arm64" || { echo "no arm64 mock NVML at $(MOCKNVML)/arm64 (set MOCKNVML)"; exit 1; }
	rm -rf $@ && mkdir -p $@
	for f in "$(abspath $(MOCKNVML))"/arm64/* "$(abspath $(MOCKNVML))/profiles"; do ln -s "$$f" $@/; done

# go test caches a package's result by its test binary's content hash (and the environment and
# files it read): an unchanged package is not run under emulation again.
.PHONY: arm64-test
arm64-test: .deps-apt agent bin/labpool-arm64 bin/arm64-nvml binfmt-arm64 ## build for linux/arm64 and run its OS and cgo tests and an arm64+amd64 pool under qemu-user
	QEMU_LD_PREFIX=$(ARM64_LIBC) LABPOOL_TEST_NVML=$(CURDIR)/bin/arm64-nvml $(ARM64_ENV) \
	  $(GO) test -short -timeout 10m -skip '$(ARM64_SKIP)' $(ARM64_PKGS)
	LABPOOL_BIN=$(CURDIR)/bin/labpool LABPOOL_ARM64_BIN=$(CURDIR)/bin/labpool-arm64 \
	  $(GO) test -count=1 -timeout 5m -run '^(TestArm64Pool|TestNoArchCode)$$' ./app/e2e

.PHONY: agent
agent: bin/labpool ## build the headless daemon and CLI (no GTK/WebKit) into bin/labpool
	@if ldd bin/labpool | grep -Eq 'gtk|webkit'; then echo "bin/labpool links GUI libraries"; exit 1; fi

# Where `make install` puts the desktop app: PREFIX/bin, PREFIX/share/applications and the
# hicolor icon theme under PREFIX/share/icons (DESTDIR is prepended, for packaging).
PREFIX     ?= $(HOME)/.local
ICON_SIZES := 16 32 48 64 128 256 512 1024
CONVERT    ?= $(shell command -v convert)
APPS_DIR    = $(DESTDIR)$(PREFIX)/share/applications
ICONS_DIR   = $(DESTDIR)$(PREFIX)/share/icons/hicolor

.PHONY: install
install: desktop ## install the desktop app for this user: binary, menu entry and icon under PREFIX (default ~/.local)
	install -D -m 0755 build/bin/labpool "$(DESTDIR)$(PREFIX)/bin/labpool"
	install -D -m 0755 build/bin/labpool-agent "$(DESTDIR)$(PREFIX)/bin/labpool-agent"
	install -D -m 0644 build/linux/labpool.desktop "$(APPS_DIR)/labpool.desktop"
	sed -i 's|^Exec=labpool$$|Exec="$(PREFIX)/bin/labpool"|' "$(APPS_DIR)/labpool.desktop"
	desktop-file-validate "$(APPS_DIR)/labpool.desktop"
	@if [ -n "$(CONVERT)" ]; then \
	  for s in $(ICON_SIZES); do \
	    mkdir -p "$(ICONS_DIR)/$${s}x$${s}/apps"; \
	    "$(CONVERT)" build/appicon.png -resize $${s}x$${s} "$(ICONS_DIR)/$${s}x$${s}/apps/labpool.png"; \
	  done; echo "icons: $(ICON_SIZES) px (ImageMagick)"; \
	else \
	  install -D -m 0644 build/appicon.png "$(ICONS_DIR)/1024x1024/apps/labpool.png"; \
	  install -D -m 0644 build/linux/labpool.png "$(ICONS_DIR)/256x256/apps/labpool.png"; \
	  echo "icons: 1024 and 256 px (no ImageMagick to size more)"; \
	fi
	@$(MAKE) --no-print-directory .desktop-caches
	@echo "installed $(DESTDIR)$(PREFIX)/bin/labpool; remove with: make uninstall PREFIX=$(PREFIX)"

.PHONY: uninstall
uninstall: ## remove what make install put under PREFIX (not the data of ~/.local/share/labpool)
	rm -f "$(DESTDIR)$(PREFIX)/bin/labpool" "$(DESTDIR)$(PREFIX)/bin/labpool-agent" "$(APPS_DIR)/labpool.desktop"
	for s in $(ICON_SIZES); do rm -f "$(ICONS_DIR)/$${s}x$${s}/apps/labpool.png"; done
	@$(MAKE) --no-print-directory .desktop-caches

# The icon cache of PREFIX's hicolor theme, where it is a theme (has its index.theme: the
# system's); the menu needs no cache, the entry declaring no MIME type.
.PHONY: .desktop-caches
.desktop-caches:
	@if [ -f "$(ICONS_DIR)/index.theme" ] && command -v gtk-update-icon-cache >/dev/null; then gtk-update-icon-cache -q -t "$(ICONS_DIR)" || true; fi

.PHONY: check-install
check-install: desktop ## install into a temporary PREFIX, check every file and the entry, uninstall, check nothing is left
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	$(MAKE) --no-print-directory install PREFIX="$$tmp/pre fix" >/dev/null && \
	entry="$$tmp/pre fix/share/applications/labpool.desktop" && \
	test -x "$$tmp/pre fix/bin/labpool" && test -x "$$tmp/pre fix/bin/labpool-agent" && \
	desktop-file-validate "$$entry" && \
	grep -qx "Exec=\"$$tmp/pre fix/bin/labpool\"" "$$entry" && \
	grep -qx 'Icon=labpool' "$$entry" && \
	icon=$$(ls "$$tmp/pre fix/share/icons/hicolor/"*/apps/labpool.png | wc -l) && test "$$icon" -ge 2 && \
	file "$$tmp/pre fix/share/icons/hicolor/1024x1024/apps/labpool.png" | grep -q '1024 x 1024' && \
	echo "install: binary, entry (valid, Exec=$$tmp/pre fix/bin/labpool) and $$icon icons" && \
	$(MAKE) --no-print-directory uninstall PREFIX="$$tmp/pre fix" >/dev/null && \
	left=$$(find "$$tmp" -type f | wc -l) && test "$$left" -eq 0 && echo "uninstall: nothing left" || \
	{ echo "check-install failed"; find "$$tmp" -type f; exit 1; }

# ---- Debian packages (make deb): build/linux/deb holds the unit, the sysctl drop-in, the
# maintainer scripts and nfpm's configs. nfpm is built once, from its module at a pinned version,
# into bin/ (nothing in go.mod); CI keeps it with bin/ and Go's module and build caches.
NFPM_VERSION := v2.45.2
NFPM        := bin/nfpm-$(NFPM_VERSION)
# dpkg wants a version that starts with a digit: a tag vX.Y.Z gives X.Y.Z, else 0.1.0~gitHASH.
DEB_VERSION ?= $(shell v=$$(git describe --tags --match 'v[0-9]*' 2>/dev/null | sed 's/^v//; s/-/+/g' || true); echo $${v:-0.1.0~git$$(git rev-parse --short HEAD 2>/dev/null || echo 0)})
DEB_DIR     := build/artifacts/deb
DEB_SRC     := $(wildcard build/linux/deb/*)
$(NFPM):
	@mkdir -p bin/.nfpm
	GOBIN=$(CURDIR)/bin/.nfpm GOFLAGS= $(GO) install github.com/goreleaser/nfpm/v2/cmd/nfpm@$(NFPM_VERSION)
	mv bin/.nfpm/nfpm $@ && rmdir bin/.nfpm

# deb-pkg packs one package: $(1) name, $(2) arch, $(3) the binary (staged where its nfpm config
# takes it from).
define deb-pkg
	install -D -m 0755 $(3) $(DEB_DIR)/stage/$(1)
	ARCH=$(2) VERSION=$(DEB_VERSION) $(NFPM) package -p deb -f build/linux/deb/$(1).yaml -t $(DEB_DIR)/$(1)_$(DEB_VERSION)_$(2).deb
	@size=$$(stat -c %s $(DEB_DIR)/$(1)_$(DEB_VERSION)_$(2).deb); echo "$(DEB_DIR)/$(1)_$(DEB_VERSION)_$(2).deb: $$((size/1024)) KiB"; \
	  test $$size -le 12582912 || { echo "over the 12 MB budget of a .deb"; exit 1; }
endef

.PHONY: deb
deb: $(NFPM) agent bin/labpool-arm64 build/bin/labpool ## build the .deb packages: labpool (amd64, arm64) and labpool-desktop (amd64) into build/artifacts/deb
	@rm -f $(DEB_DIR)/*.deb
	$(call deb-pkg,labpool,amd64,bin/labpool)
	$(call deb-pkg,labpool,arm64,bin/labpool-arm64)
	$(call deb-pkg,labpool-desktop,amd64,build/bin/labpool)
	@echo "no arm64 labpool-desktop: Debian 12 cannot install GTK's and WebKit's arm64 headers beside the amd64 toolchain (README)"

.PHONY: deb-test
deb-test: deb ## install the amd64 packages into a fresh Debian root (mmdebstrap, namespaces; root): files, user, unit, upgrade, remove, purge, the agent sandboxed in a pool
	DEB_DIR=$(DEB_DIR) DEB_VERSION=$(DEB_VERSION) NFPM=$(NFPM) build/linux/deb/test.sh

# The headless binary for each OS and architecture a lab's machines run. NVML is
# read only on Linux with cgo (node/gpu): linux/arm64 is built with the aarch64
# cross compiler (apt package gcc-aarch64-linux-gnu), macOS and Windows without cgo.
DIST_TARGETS := linux/amd64 linux/arm64 darwin/arm64 darwin/amd64 windows/amd64
DIST_MAX_MB  := 25
# The Linux binaries are the ones the tests run (bin/labpool, bin/labpool-arm64): built once.
DIST_CROSS   := $(filter-out linux/%,$(DIST_TARGETS))
dist_bin = dist/labpool-$(subst /,-,$(1))$(if $(findstring windows,$(1)),.exe)

define dist-rule
$(call dist_bin,$(1)): frontend/dist/index.html $$(GO_SRC)
	GOOS=$(word 1,$(subst /, ,$(1))) GOARCH=$(word 2,$(subst /, ,$(1))) \
	  CGO_ENABLED=$(if $(findstring linux,$(1)),1,0) \
	  $(if $(findstring linux/arm64,$(1)),CC=aarch64-linux-gnu-gcc) \
	  $$(GO) build -trimpath -tags headless -ldflags '$$(LDFLAGS)' -o $$@ .
	@size=$$$$(stat -c %s $$@); echo "$$@: $$$$((size / 1024 / 1024)) MB"; \
	  test $$$$size -le $$$$(( $(DIST_MAX_MB) * 1024 * 1024 )) || { echo "$$@ is over $(DIST_MAX_MB) MB"; exit 1; }
endef
$(foreach t,$(DIST_CROSS),$(eval $(call dist-rule,$(t))))

dist/labpool-linux-amd64: bin/labpool
	install -D -m 0755 $< $@
	@test $$(stat -c %s $@) -le $$(( $(DIST_MAX_MB) * 1024 * 1024 )) || { echo "$@ is over $(DIST_MAX_MB) MB"; exit 1; }
dist/labpool-linux-arm64: bin/labpool-arm64
	install -D -m 0755 $< $@
	@test $$(stat -c %s $@) -le $$(( $(DIST_MAX_MB) * 1024 * 1024 )) || { echo "$@ is over $(DIST_MAX_MB) MB"; exit 1; }

# The window for Windows, built from here: Wails needs no cgo there (WebView2 is loaded at run
# time). What `wails build -platform windows/amd64` runs, without the wails CLI: its tags, -H
# windowsgui, and the resources it compiles from build/windows into a .syso (build/windows/syso.sh,
# with go-winres at a pinned version, built once into bin/ like nfpm). The .syso's name limits it
# to windows/amd64 builds, the headless labpool.exe's included (its icon and version too).
GO_WINRES_VERSION := v0.3.3
GO_WINRES := bin/go-winres-$(GO_WINRES_VERSION)
WIN_SYSO  := labpool_windows_amd64.syso
WIN_GUI_TAGS := desktop,wv2runtime.download,production
$(GO_WINRES):
	@mkdir -p bin/.go-winres
	GOBIN=$(CURDIR)/bin/.go-winres GOFLAGS= $(GO) install github.com/tc-hib/go-winres@$(GO_WINRES_VERSION)
	mv bin/.go-winres/go-winres $@ && rmdir bin/.go-winres

$(WIN_SYSO): $(GO_WINRES) build/windows/syso.sh build/windows/icon.ico build/windows/wails.exe.manifest build/windows/info.json wails.json
	build/windows/syso.sh $(GO_WINRES) $@

dist/labpool-windows-amd64.exe: $(WIN_SYSO)

dist/labpool-window-windows-amd64.exe: frontend/dist/index.html $(GO_SRC) $(WIN_SYSO)
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) build -trimpath -tags $(WIN_GUI_TAGS) \
	  -ldflags '$(LDFLAGS) -H windowsgui' -o $@ .
	@pe=$$(od -An -tu4 -j60 -N4 $@) && [ "$$(od -An -c -j$$pe -N4 $@ | tr -d ' ')" = 'PE\0\0' ] && \
	  [ $$(od -An -tx2 -j$$((pe + 4)) -N2 $@) = 8664 ] && [ $$(od -An -tu2 -j$$((pe + 92)) -N2 $@) = 2 ] || \
	  { echo "$@ is not a Windows GUI program for amd64 (PE subsystem 2)"; exit 1; }
	@echo "$@: $$(( $$(stat -c %s $@) / 1024 / 1024 )) MB"

# The Linux window is the one the tests run (build/bin/labpool, make desktop).
dist/labpool-window-linux-amd64: build/bin/labpool
	install -D -m 0755 $< $@

.PHONY: dist
dist: $(foreach t,$(DIST_TARGETS),$(call dist_bin,$(t))) dist/labpool-window-linux-amd64 dist/labpool-window-windows-amd64.exe ## build the headless labpool for every OS and architecture (each at most 25 MB), and the window for Linux and Windows, into dist/

# ---- The macOS app (make mac-app, on a Mac): the window, universal (arm64 and amd64), with the
# headless agent it starts beside its binary in the bundle (agentbin.go), signed with the hardened
# runtime and build/darwin/entitlements.plist, notarized and stapled. The wails CLI is built once,
# at the version go.mod requires, into bin/ (nothing in go.mod). MAC_SIGN_ID: a "Developer ID
# Application: ..." identity in the keychain; MAC_NOTARY_PROFILE: a profile stored with
# `xcrun notarytool store-credentials`.
WAILS_VERSION := v2.16.0
WAILS     := bin/wails-$(WAILS_VERSION)
MAC_APP   := build/bin/labpool.app
MAC_SIGN_ID        ?=
MAC_NOTARY_PROFILE ?=
$(WAILS):
	@mkdir -p bin/.wails
	GOBIN=$(CURDIR)/bin/.wails GOFLAGS= $(GO) install github.com/wailsapp/wails/v2/cmd/wails@$(WAILS_VERSION)
	mv bin/.wails/wails $@ && rmdir bin/.wails

.PHONY: mac-app
mac-app: ## on a Mac: build the universal labpool.app, sign it (MAC_SIGN_ID), notarize and staple it (MAC_NOTARY_PROFILE) into dist/
	@[ "$$(uname -s)" = Darwin ] || { echo "make mac-app runs on a Mac: it needs the macOS SDK, codesign and notarytool"; exit 1; }
	@[ -n "$(MAC_SIGN_ID)" ] && [ -n "$(MAC_NOTARY_PROFILE)" ] || { echo "make mac-app needs MAC_SIGN_ID (a Developer ID Application identity) and MAC_NOTARY_PROFILE (xcrun notarytool store-credentials)"; exit 1; }
	@$(MAKE) --no-print-directory frontend $(WAILS)
	$(WAILS) build -platform darwin/universal -s -skipbindings -m -nosyncgomod -trimpath -clean \
	  -ldflags '-X main.version=$(VERSION)'
	for a in arm64 amd64; do GOOS=darwin GOARCH=$$a CGO_ENABLED=0 $(GO) build -trimpath -tags headless \
	  -ldflags '$(LDFLAGS)' -o build/bin/labpool-agent-$$a . || exit 1; done
	lipo -create -output $(MAC_APP)/Contents/MacOS/labpool-agent build/bin/labpool-agent-arm64 build/bin/labpool-agent-amd64
	codesign --force --options runtime --timestamp --entitlements build/darwin/entitlements.plist \
	  --sign "$(MAC_SIGN_ID)" $(MAC_APP)/Contents/MacOS/labpool-agent
	codesign --deep --force --options runtime --timestamp --entitlements build/darwin/entitlements.plist \
	  --sign "$(MAC_SIGN_ID)" $(MAC_APP)
	codesign --verify --deep --strict --verbose=2 $(MAC_APP)
	@mkdir -p dist && rm -f dist/labpool-macos-universal.zip
	ditto -c -k --keepParent $(MAC_APP) dist/labpool-macos-universal.zip
	xcrun notarytool submit dist/labpool-macos-universal.zip --keychain-profile "$(MAC_NOTARY_PROFILE)" --wait
	xcrun stapler staple $(MAC_APP)
	spctl --assess --type execute --verbose $(MAC_APP)
	rm -f dist/labpool-macos-universal.zip && ditto -c -k --keepParent $(MAC_APP) dist/labpool-macos-universal.zip
	@echo "dist/labpool-macos-universal.zip: labpool.app, signed, notarized and stapled"

# macOS and Windows cannot run here (Wine 8 cannot start a Go 1.26 Windows binary:
# bcryptprimitives.dll is missing), so their code is checked by vet, tests included. The macOS
# window cannot be built here: Wails' darwin frontend is Objective-C through cgo (the macOS SDK).
# Its tag `bindings` (the mode wails uses to generate bindings) leaves that frontend out and keeps
# the rest: our window code (main_desktop.go, background.go) type-checks for darwin under it.
.PHONY: vet-cross
vet-cross: ## go vet the headless build for macOS and Windows, and the window's code for both
	GOOS=darwin GOARCH=arm64 $(GO) vet -tags headless ./...
	GOOS=windows GOARCH=amd64 $(GO) vet -tags headless ./...
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) vet -tags $(WIN_GUI_TAGS) .
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet -tags bindings .

.PHONY: test
test: deps frontend agent desktop dist vet-cross arm64-test ## run every test: unit (with -race), fuzz seeds, multi-host, browser, window
	$(GO) vet ./...
	$(GO) vet -tags headless ./...
	cd frontend && npm test && npm run check
	$(GO) test -race -count=1 -timeout 20m $(UNIT_PKGS)
	LABPOOL_BIN=$(CURDIR)/bin/labpool LABPOOL_GUI_BIN=$(CURDIR)/build/bin/labpool \
	  $(GO) test -count=1 -timeout 20m -skip '^TestArm64Pool$$' ./app/e2e

.PHONY: test-short
test-short: ## unit tests only (no namespaces, browser or window)
	$(GO) test -short ./...

.PHONY: bench
bench: agent ## run the benchmarks the issues ask for (root, for the namespaces)
	$(GO) test -run '^$$' -bench . -benchtime 2s ./node/... ./sync/... ./app
	$(GO) test -run '^$$' -bench 'Dashboard|Chart|Ingest|ViewerLoad|Record' -benchtime 2s ./app/history
	$(GO) test -run '^$$' -bench 'MachineYear|Backfill' -benchtime 1x -timeout 20m ./app/history
	LABPOOL_BIN=$(CURDIR)/bin/labpool $(GO) test -run '^$$' -bench 'AgentVisible|AgentCost|LaunchOverhead|Join$$' -benchtime 7x -timeout 20m ./app/e2e
	LABPOOL_BIN=$(CURDIR)/bin/labpool $(GO) test -run '^$$' -bench CopyVsSSH -benchtime 1x -timeout 20m ./app/e2e
	LABPOOL_BIN=$(CURDIR)/bin/labpool $(GO) test -run '^$$' -bench TelemetryDuringCopy -benchtime 1x -timeout 20m ./app/e2e
	LABPOOL_BIN=$(CURDIR)/bin/labpool $(GO) test -run '^$$' -bench SlurmStateVisible -benchtime 5x -timeout 20m ./app/e2e
	LABPOOL_BIN=$(CURDIR)/bin/labpool $(GO) test -run '^$$' -bench Removal -benchtime 20x -timeout 20m ./app/e2e
	LABPOOL_BIN=$(CURDIR)/bin/labpool $(GO) test -run '^$$' -bench PartitionHeal -benchtime 10x -timeout 20m ./app/e2e
	LABPOOL_BIN=$(CURDIR)/bin/labpool $(GO) test -run '^$$' -bench LossOffline -benchtime 1x -timeout 20m ./app/e2e
	LABPOOL_BIN=$(CURDIR)/bin/labpool LABPOOL_BENCH_HANDSHAKES=10000 $(GO) test -run '^$$' -bench HandshakeFlood -benchtime 1x -timeout 20m ./app/e2e

# Every fuzzer of the network decoders, as package:FuzzName (each name is matched whole).
FUZZERS := \
  ./sync/peer:FuzzParseID \
  ./discovery:FuzzParseTXT \
  ./sync/replica:FuzzDecodeFrame \
  ./app/history:FuzzDecodePoint \
  ./app:FuzzDecodeEnergy \
  ./sync/pool:FuzzParseCode \
  ./sync/pool:FuzzApplyRecord \
  ./sync/pool:FuzzVerifyLog \
  ./sync/pool:FuzzInviteCode \
  ./sync/pool:FuzzAdmit \
  ./node/folders:FuzzDecodeGrant \
  ./node/containers:FuzzValidate \
  ./node/folders:FuzzCleanPath \
  ./node/folders:FuzzDecodeWalk \
  ./node/folders:FuzzReadBundle \
  ./app/web:FuzzReadSSE \
  ./node/alerts:FuzzHandler \
  ./node/slurm:FuzzParseSqueue \
  ./node/slurm:FuzzParseSqueueText \
  ./node/slurm:FuzzParseSinfo \
  ./node/slurm:FuzzParseScontrolJobs \
  ./node/slurm:FuzzParseGRES \
  ./node/slurm:FuzzExpandHostlist \
  ./node/slurm:FuzzParseComment \
  ./node/slurm:FuzzProcParsers \
  ./node/slurm:FuzzAllocation \
  ./node/jobs:FuzzContainerInCgroup \
  ./node/host:FuzzProcfsParsers \
  ./sync/pool:FuzzSigningBytes \
  ./sync/replica:FuzzAppendRecordsFrame \
  ./sync/schema:FuzzCheckText \
  ./node/jobs:FuzzDecodeProof \
  ./node/alloc:FuzzFit \
  ./node/reserve:FuzzDecodeRequest
# How long `make fuzz-long` runs each fuzzer, and flags for every fuzz run (e.g. -parallel 2).
FUZZTIME  ?= 30m
FUZZFLAGS ?=

# fuzz-each runs every fuzzer of FUZZERS for $(1), goes on past a failure (the crasher is
# written under its package's testdata/fuzz) and fails at the end, naming those that failed.
define fuzz-each
	@failed=; for f in $(FUZZERS); do pkg=$${f%%:*}; name=$${f#*:}; \
	  echo "== $$name ($$pkg), $(1)"; \
	  $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(1) $(FUZZFLAGS) $$pkg || failed="$$failed $$pkg:$$name"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzzers that failed:$$failed"; exit 1; fi; echo "every fuzzer ran $(1) without a failure"
endef

.PHONY: fuzz
fuzz: ## fuzz each network decoder for 20 s
	$(call fuzz-each,20s)

.PHONY: fuzz-long
fuzz-long: ## fuzz each network decoder for FUZZTIME (default 30m each, about 12 h in all; not for CI)
	$(call fuzz-each,$(FUZZTIME))

.PHONY: gen
gen: ## regenerate what is generated: the TypeScript types of the local API (frontend/src/api/types.gen.ts)
	$(GO) generate ./...

.PHONY: check
check: ## fail when gofmt, go mod tidy or go generate would change something, or the desktop entry is invalid
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) mod tidy -e && git diff --exit-code go.mod go.sum
	$(GO) generate ./... && git diff --exit-code frontend/src/api/types.gen.ts
	@command -v desktop-file-validate >/dev/null || { echo "make check needs desktop-file-validate (apt package desktop-file-utils)"; exit 1; }
	desktop-file-validate build/linux/labpool.desktop

.PHONY: clean
clean: ## remove build outputs
	rm -rf bin build/bin dist .deps-apt $(WIN_SYSO)
