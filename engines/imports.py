"""Point one library's import of a C function at another function, in this process (Linux, glibc, x86-64 or AArch64).

    redirect("libopenvino.so", "malloc_trim", replacement)   # True where the library's calls now go there
    target("libopenvino.so", "malloc_trim")                  # the address they go to now

A shared library calls a function of another through its global offset table: one pointer per imported symbol, that
the dynamic loader fills in. `redirect` finds that pointer from the library's own ELF relocations (read from its
file, as loaded in this process) and writes another function's address into it; the library's later calls go there.
Only the named library's calls change, not those of the rest of the process.

It changes nothing and returns False wherever any step is not as expected: another platform, the library not loaded,
no such import, a pointer that does not hold the symbol's own address (nor, where the loader binds lazily, a stub of
the library's own: so an import is redirected once), a page it cannot write. Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
from typing import Dict, List, Optional, Tuple

# relocation types of a resolved import: (GLOB_DAT, JUMP_SLOT)
_IMPORT_RELOCATIONS = {"x86_64": (6, 7), "aarch64": (1025, 1026)}
_SHT_RELA, _SHT_DYNSYM = 4, 11
_PROT_READ, _PROT_WRITE, _PROT_EXEC = 1, 2, 4


Maps = List[Tuple[int, int, str, int, str]]  # this process's mappings: (start, end, permissions, file offset, path)


def redirect(library: str, symbol: str, replacement: int) -> bool:
    """Make the loaded library whose file name starts with `library` call `replacement` (a function's address, of
    the same signature) for `symbol`; whether it now does."""
    found = _pointers(library, symbol) if replacement else None
    if not found:
        return False
    maps, path, addresses = found
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        expected = ctypes.cast(getattr(libc, symbol), ctypes.c_void_p).value
    except (OSError, AttributeError):
        return False
    for address in addresses:  # every pointer checked before any is written
        held = ctypes.c_uint64.from_address(address).value
        if held != expected and not _inside(maps, path, held):
            return False  # not the symbol's address, nor a lazy stub of the library's own: leave it as it is
    return all(_write(libc, maps, address, replacement) for address in addresses)


def target(library: str, symbol: str) -> Optional[int]:
    """Where the loaded library's calls to `symbol` go now (the address its pointer holds), None where it cannot be
    told."""
    found = _pointers(library, symbol)
    if not found:
        return None
    held = {ctypes.c_uint64.from_address(address).value for address in found[2]}
    return held.pop() if len(held) == 1 else None


def _pointers(library: str, symbol: str) -> Optional[Tuple[Maps, str, List[int]]]:
    """The mappings, the loaded library's file and the addresses of the pointers through which it calls `symbol`
    (each inside the library's own mappings); None where there is none, or any step is not as expected."""
    machine = os.uname().machine
    if not sys.platform.startswith("linux") or machine not in _IMPORT_RELOCATIONS:
        return None
    try:
        maps = _mappings()
        loaded = _loaded(maps, library)
        if loaded is None:
            return None
        path, start = loaded
        first, slots = _import_slots(path, symbol, _IMPORT_RELOCATIONS[machine])
    except (OSError, ValueError, IndexError, struct.error):
        return None
    addresses = [start - first + offset for offset in slots]
    if not addresses or not all(_inside(maps, path, address) for address in addresses):
        return None
    return maps, path, addresses


def _mappings() -> Maps:
    """This process's mappings: (start, end, permissions, file offset, path)."""
    found = []
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) < 5:
                continue
            start, end = (int(x, 16) for x in parts[0].split("-"))
            found.append((start, end, parts[1], int(parts[2], 16), parts[5].strip() if len(parts) > 5 else ""))
    return found


def _loaded(maps: Maps, library: str) -> Optional[Tuple[str, int]]:
    """The library's file and its load bias (where its first segment, file offset 0, is mapped)."""
    for start, _end, _perms, offset, path in maps:
        if offset == 0 and path and os.path.basename(path).startswith(library):
            return path, start
    return None


def _inside(maps: Maps, path: str, address: int) -> bool:
    return any(start <= address < end for start, end, _p, _o, p in maps if p == path)


def _import_slots(path: str, symbol: str, types: Tuple[int, int]) -> Tuple[int, List[int]]:
    """The address its first loaded segment asks for, and the addresses (before the load bias) of the pointers
    through which the library calls `symbol`: its relocations of those types that name the symbol, from the file's
    section headers."""
    with open(path, "rb") as f:
        header = f.read(64)
        if header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:  # 64-bit, little-endian
            raise ValueError("not a 64-bit little-endian ELF file")
        phoff, shoff = struct.unpack_from("<QQ", header, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", header, 0x36)
        f.seek(phoff)
        programs = f.read(phentsize * phnum)
        first = min(struct.unpack_from("<IIQQ", programs, i * phentsize)[3] for i in range(phnum)
                    if struct.unpack_from("<I", programs, i * phentsize)[0] == 1)  # PT_LOAD's p_vaddr
        shentsize, shnum = struct.unpack_from("<HH", header, 0x3A)
        f.seek(shoff)
        table = f.read(shentsize * shnum)
        sections = [struct.unpack_from("<IIQQQQIIQQ", table, i * shentsize) for i in range(shnum)]

        def read(index: int) -> bytes:
            _name, _type, _flags, _addr, offset, size, *_ = sections[index]
            f.seek(offset)
            return f.read(size)

        tables: Dict[int, Tuple[bytes, bytes, int]] = {}  # a symbol table's index -> it, its strings, entry size
        slots = []
        for _name, kind, _flags, _addr, _offset, _size, link, _info, _align, entsize in sections:
            if kind != _SHT_RELA or entsize < 24 or link >= len(sections) or sections[link][1] != _SHT_DYNSYM:
                continue
            if link not in tables:
                tables[link] = read(link), read(sections[link][6]), sections[link][9] or 24
        for index, (_name, kind, _flags, _addr, _offset, _size, link, _info, _align, entsize) in enumerate(sections):
            if link not in tables or kind != _SHT_RELA or entsize < 24:
                continue
            symbols, strings, size = tables[link]
            relocations = read(index)
            for at in range(0, len(relocations) - entsize + 1, entsize):
                r_offset, r_info = struct.unpack_from("<QQ", relocations, at)
                if r_info & 0xFFFFFFFF not in types:
                    continue
                st_name, = struct.unpack_from("<I", symbols, (r_info >> 32) * size)
                if strings[st_name:strings.find(b"\0", st_name)] == symbol.encode():
                    slots.append(r_offset)
        return first & ~(os.sysconf("SC_PAGE_SIZE") - 1), slots


def _write(libc: ctypes.CDLL, maps: Maps, address: int, value: int) -> bool:
    """Write a pointer, making its page writable for the write where it is not (RELRO) and as it was after."""
    perms = next((p for start, end, p, _o, _path in maps if start <= address < end), "")
    if not perms.startswith("r"):
        return False
    pointer = ctypes.c_uint64.from_address(address)
    if "w" in perms:
        pointer.value = value
        return True
    page = os.sysconf("SC_PAGE_SIZE")
    start = address & ~(page - 1)
    before = _PROT_READ | (_PROT_EXEC if "x" in perms else 0)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    if libc.mprotect(start, page, before | _PROT_WRITE) != 0:
        return False
    try:
        pointer.value = value
    finally:
        libc.mprotect(start, page, before)
    return True
