#!/usr/bin/env bash
# syso.sh GO_WINRES OUT.syso: the Windows resources of the labpool window (its icon, manifest and
# version information) as the object file that `go build` links into the .exe, what `wails build`
# compiles from these files: wails.exe.manifest and info.json are wails' templates, filled here
# from wails.json. The icon's group is #3, the one the Wails runtime loads for the window and its
# dialogs (winc.AppIconID), as wails build writes it. The .syso is for windows/amd64 only (go build skips it for other targets by
# its _windows_amd64 suffix).
set -euo pipefail
winres=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT

# wails' template fields, from wails.json (jq escapes them for sed: no |, &, \ or newline survives raw).
field() { jq -r "$1" "$root/wails.json" | sed 's/[|&\\]/\\&/g'; }
fill() {
	sed -e "s|{{.Name}}|$(field .name)|g" \
	    -e "s|{{.Info.ProductVersion}}|$(field .info.productVersion)|g" \
	    -e "s|{{.Info.CompanyName}}|$(field .info.companyName)|g" \
	    -e "s|{{.Info.ProductName}}|$(field .info.productName)|g" \
	    -e "s|{{.Info.Copyright}}|$(field .info.copyright)|g" \
	    -e "s|{{.Info.Comments}}|$(field .info.comments)|g" "$1"
}
fill "$here/wails.exe.manifest" >"$tmp/app.manifest"
cp "$here/icon.ico" "$tmp/icon.ico"
if grep -q '{{' "$tmp/app.manifest" <(fill "$here/info.json"); then
	echo "syso.sh: a wails template field that wails.json does not fill is left in build/windows" >&2
	exit 1
fi
jq -n --slurpfile info <(fill "$here/info.json") '{
	RT_GROUP_ICON: {"#3": {"0000": "icon.ico"}},
	RT_MANIFEST: {"#1": {"0409": "app.manifest"}},
	RT_VERSION: {"#1": {"0000": $info[0]}}
}' >"$tmp/winres.json"
"$winres" make --in "$tmp/winres.json" --arch amd64 --no-suffix --out "$out"
