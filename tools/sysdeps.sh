#!/usr/bin/env bash
# Debian packages the pipeline shells out to: espeak-ng (sample speech) and ffmpeg (audio muxing/decoding).
set -euo pipefail
missing=()
command -v espeak-ng >/dev/null || missing+=(espeak-ng)
command -v ffmpeg >/dev/null || missing+=(ffmpeg)
command -v ffprobe >/dev/null || missing+=(ffmpeg)
[ ${#missing[@]} -eq 0 ] && exit 0
pkgs=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo ">> installing Debian packages: $pkgs"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q $pkgs >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q $pkgs >/dev/null; }
else
  echo "promem needs these system packages: $pkgs" >&2
  echo "install them, e.g.: sudo apt-get install -y $pkgs   (macOS: brew install espeak-ng ffmpeg)" >&2
  exit 1
fi
