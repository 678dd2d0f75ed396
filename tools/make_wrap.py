#!/usr/bin/env python3
"""Writes weft.wrap, a meson [wrap-file] for a tarball made by `meson dist`, to standard output.

A consumer puts it at subprojects/weft.wrap and writes dependency('weft'): meson unpacks the tarball (from
subprojects/packagecache/ if it is there, or downloaded from the URL otherwise; either way checked against the
sha256 recorded here) and builds weft as a subproject. [provide] maps the dependency name weft to weft_dep.

usage: make_wrap.py TARBALL [--url URL]
  TARBALL  weft-<version>.tar.xz (or .tar.gz, .zip) from `meson dist`, in <build>/meson-dist/
  --url    where consumers can download it (default: a file: URL of TARBALL, for this machine only)
"""
import argparse
import hashlib
import pathlib
import sys
import tarfile
import zipfile


def top_directory(tarball: pathlib.Path) -> str:
    """The one directory the archive unpacks into, as `meson dist` makes it (weft-<version>)."""
    if tarball.suffix == '.zip':
        with zipfile.ZipFile(tarball) as archive:
            names = archive.namelist()
    else:
        with tarfile.open(tarball) as archive:
            names = archive.getnames()
    tops = {name.split('/', 1)[0] for name in names if name}
    if len(tops) != 1:
        raise ValueError('%s does not unpack into one directory (it holds %s); is it from meson dist?'
                         % (tarball, ', '.join(sorted(tops)[:5])))
    return tops.pop()


def main() -> int:
    parser = argparse.ArgumentParser(description='Write a meson [wrap-file] for a weft tarball from meson dist.')
    parser.add_argument('tarball', type=pathlib.Path)
    parser.add_argument('--url', help='where consumers download the tarball (default: a file: URL of it)')
    args = parser.parse_args()
    tarball = args.tarball.resolve()
    if not tarball.is_file():
        print('make_wrap.py: no such tarball: %s' % args.tarball, file=sys.stderr)
        return 1
    try:
        directory = top_directory(tarball)
    except ValueError as e:
        print('make_wrap.py: %s' % e, file=sys.stderr)
        return 1
    except (tarfile.TarError, zipfile.BadZipFile) as e:
        print('make_wrap.py: %s is not an archive meson dist makes (.tar.xz, .tar.gz, .zip): %s'
              % (args.tarball, str(e).splitlines()[0]), file=sys.stderr)
        return 1
    sha256 = hashlib.sha256(tarball.read_bytes()).hexdigest()
    print('[wrap-file]')
    print('directory = %s' % directory)
    print('source_url = %s' % (args.url or tarball.as_uri()))
    print('source_filename = %s' % tarball.name)
    print('source_hash = %s' % sha256)
    print()
    print('[provide]')
    print('weft = weft_dep')
    return 0


if __name__ == '__main__':
    sys.exit(main())
