#!/bin/sh
# What a crates.io user of coretune-pool gets: `cargo package` (which builds the packaged crate
# in target/package/, apart from the workspace), the license texts inside the .crate, and every
# Rust example of crates/pool/README.md compiled as pasted — each is a whole program with its
# own `fn main` — by an outside crate that depends on the unpacked package. Part of `make test`.
set -eu
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}

# --allow-dirty: a working copy with changes is checked as it is (CI's clone is clean anyway).
$CARGO package --quiet --locked --offline --allow-dirty -p coretune-pool
version=$($CARGO pkgid -p coretune-pool | sed 's/.*[#@]//')
crate=target/package/coretune-pool-$version.crate
unpacked=target/package/coretune-pool-$version
for file in LICENSE-MIT LICENSE-APACHE README.md; do
    tar -tzf "$crate" | grep -qx "coretune-pool-$version/$file" ||
        { echo "check-pool-package: $crate has no $file" >&2; exit 1; }
done
if grep -q 'example.invalid' "$unpacked/Cargo.toml"; then
    echo "check-pool-package: placeholder metadata in $unpacked/Cargo.toml" >&2
    exit 1
fi

user=$(mktemp -d)
trap 'rm -rf "$user"' EXIT
mkdir -p "$user/src/bin"
cat > "$user/Cargo.toml" <<TOML
[package]
name = "pool-user"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
coretune-pool = { path = "$PWD/$unpacked" }
# The README's recipe that reads a coretune summary.json.
serde_json = "1"

[workspace]
TOML
# The workspace's lock file pins the same versions, so that this builds offline.
cp Cargo.lock "$user/Cargo.lock"
# Each ```rust block of the README, as its own program.
awk -v dir="$user/src/bin" '
    /^```rust/ { n++; file = sprintf("%s/readme_%02d.rs", dir, n); inside = 1; next }
    /^```/ && inside { inside = 0; close(file); next }
    inside { print > file }
' crates/pool/README.md
count=$(ls "$user/src/bin" | wc -l)
if [ "$count" -eq 0 ]; then
    echo "check-pool-package: no Rust example in crates/pool/README.md" >&2
    exit 1
fi
for example in "$user"/src/bin/*.rs; do
    if grep -q '^# ' "$example"; then
        echo "check-pool-package: $(basename "$example"): hidden doctest lines do not paste" >&2
        exit 1
    fi
done
CARGO_TARGET_DIR="$PWD/target/pool-user" $CARGO build --quiet --offline --bins \
    --manifest-path "$user/Cargo.toml"
# And they run, as their doc tests do.
for example in "$user"/src/bin/*.rs; do
    name=$(basename "$example" .rs)
    "$PWD/target/pool-user/debug/$name" > /dev/null ||
        { echo "check-pool-package: README example $name failed" >&2; exit 1; }
done
echo "check-pool-package: $crate packaged with its licenses; $count README examples compile as pasted and run"
