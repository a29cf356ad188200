#!/usr/bin/env python3
"""Generates emulator/src/isa_tables.inc: every opcode of every encoding family of gfx942 and
gfx950 with LLVM's mnemonic and operand template, read off llvm-objdump-22 (the oracle).

Facts, not code: for each family and opcode we encode one probe instruction whose operand fields
hold distinctive values, disassemble all probes with llvm-objdump, and turn the printed operands
back into field references ("D:2" = the destination field, two registers). Modifiers (offsets,
cache bits, op_sel, ...) are printed by the decoder from the fields themselves, so they are
stripped here. Run: tools/isa/gen_isa_tables.py > emulator/src/isa_tables.inc
"""
import os, re, subprocess, sys, tempfile

ARCHS = ['gfx942', 'gfx950']

def objdump(words, mcpu):
    with tempfile.TemporaryDirectory() as d:
        s, o = os.path.join(d, 't.s'), os.path.join(d, 't.o')
        with open(s, 'w') as f:
            f.write('.text\n' + ''.join('.long 0x%08x\n' % w for w in words))
        subprocess.run(['llvm-mc-22', '-triple=amdgcn-amd-amdhsa', '-mcpu=' + mcpu, '-filetype=obj', s, '-o', o], check=True)
        out = subprocess.run(['llvm-objdump-22', '-d', '--mcpu=' + mcpu, o], capture_output=True, text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        m = re.match(r'\t(.*?)\s*// ([0-9A-F]{12}): ((?:[0-9A-F]{8} ?)+)(?: <.*>)?$', line)
        if m:
            text, off, hexwords = m.groups()
            res[int(off, 16)] = None if text.startswith('.long') else text
    return res

CRASH = ''  # the text of a probe llvm-objdump-22 crashes on (it does on a few literal forms)

def probe(cases, mcpu):
    """Disassembles each probe (padded with s_nop so a literal never eats the next probe). Where
    llvm-objdump crashes, the probes are split in halves until the crashing ones are found."""
    try:
        return probe_batch(cases, mcpu)
    except subprocess.CalledProcessError:
        if len(cases) == 1:
            return [CRASH]
        half = len(cases) // 2
        return probe(cases[:half], mcpu) + probe(cases[half:], mcpu)

def probe_batch(cases, mcpu):
    pad = [0xbf800000] * 3
    words, starts = [], []
    for ws in cases:
        starts.append(4 * len(words))
        words += list(ws) + pad
    res = objdump(words, mcpu)
    return [res.get(s) for s in starts]

# Each family: opcode count, probe builder, {printed register number: field}.
# Field values are distinct so every printed register names its field unambiguously.
V = lambda n: 256 + n  # a VGPR in a 9-bit source field
FAMILIES = {
    'SOP2': (128, lambda op: [(0b10 << 30) | (op << 23) | (10 << 16) | (20 << 8) | 30], {10: 'D', 30: 'S0', 20: 'S1'}),
    'SOPK': (32, lambda op: [(0b1011 << 28) | (op << 23) | (10 << 16) | 0x1234], {10: 'D'}),
    'SOP1': (256, lambda op: [(0x17D << 23) | (10 << 16) | (op << 8) | 30], {10: 'D', 30: 'S0'}),
    'SOPC': (128, lambda op: [(0x17E << 23) | (op << 16) | (20 << 8) | 30], {30: 'S0', 20: 'S1'}),
    'SOPP': (128, lambda op: [(0x17F << 23) | (op << 16) | 3], {}),
    'SOPP0': (128, lambda op: [(0x17F << 23) | (op << 16)], {}),  # ops without an immediate operand
    'SMEM': (256, lambda op: [(0b110000 << 26) | (op << 18) | (1 << 17) | (12 << 6) | 10, 0x40], {12: 'D', 20: 'B'}),
    'SMEM~1': (256, lambda op: [(0b110000 << 26) | (op << 18) | (12 << 6), 0], {12: 'D'}),  # s_memtime: no offset
    'SMEM~2': (256, lambda op: [(0b110000 << 26) | (op << 18), 0], {}),  # s_dcache_wb: no operands
    'VOP1': (256, lambda op: [(0x3F << 25) | (10 << 17) | (op << 9) | V(20)], {10: 'D', 20: 'S0'}),
    'VOP1~1': (256, lambda op: [(0x3F << 25) | (op << 9) | V(20)], {20: 'S0'}),  # v_nop: vdst must be 0
    'VOPC': (256, lambda op: [(0x3E << 25) | (op << 17) | (30 << 9) | V(20)], {20: 'S0', 30: 'S1'}),
    'VOP2': (62, lambda op: [(op << 25) | (10 << 17) | (30 << 9) | V(20)], {10: 'D', 20: 'S0', 30: 'S1'}),
    # VOP3 and VOP3P: sdst of VOP3b is s[0:1] (bits 14:8), vdst 10; sources v20, v40, v60.
    # sdst 0 keeps VOP3a's abs and op_sel bits (which share those bits) clear.
    'VOP3': (896, lambda op: [(0b110100 << 26) | (op << 16) | 10, V(20) | (V(40) << 9) | (V(60) << 18)],
             {10: 'D', 0: 'SD', 20: 'S0', 40: 'S1', 60: 'S2'}),
    'VOP3P': (128, lambda op: [(0x1A7 << 23) | (op << 16) | (1 << 14) | 10, V(20) | (V(40) << 9) | (V(60) << 18) | (3 << 27)],
              {10: 'D', 20: 'S0', 40: 'S1', 60: 'S2'}),
    # without op_sel_hi (an MFMA's abid bit 3: v_mfma_*_f8f6f4 takes no abid)
    'VOP3P~1': (128, lambda op: [(0x1A7 << 23) | (op << 16) | 10, V(20) | (V(40) << 9) | (V(60) << 18)],
                {10: 'D', 20: 'S0', 40: 'S1', 60: 'S2'}),
    'DS': (256, lambda op: [(0b110110 << 26) | (op << 17) | 0x0201, 20 | (30 << 8) | (40 << 16) | (10 << 24)],
           {10: 'D', 20: 'A', 30: 'S0', 40: 'S1'}),
    # DS fields an opcode does not use must be 0: probe every combination, fullest first.
    'DS~1': (256, lambda op: [(0b110110 << 26) | (op << 17) | 0x0201, 20 | (30 << 8) | (40 << 16)], {20: 'A', 30: 'S0', 40: 'S1'}),
    'DS~2': (256, lambda op: [(0b110110 << 26) | (op << 17) | 0x0201, 20 | (30 << 8) | (10 << 24)], {10: 'D', 20: 'A', 30: 'S0'}),
    'DS~3': (256, lambda op: [(0b110110 << 26) | (op << 17) | 0x0201, 20 | (30 << 8)], {20: 'A', 30: 'S0'}),
    'DS~4': (256, lambda op: [(0b110110 << 26) | (op << 17) | 0x0201, 20 | (10 << 24)], {10: 'D', 20: 'A'}),
    'DS~5': (256, lambda op: [(0b110110 << 26) | (op << 17) | 0x0201, 20], {20: 'A'}),
    'DS~6': (256, lambda op: [(0b110110 << 26) | (op << 17) | 0x0201, (10 << 24)], {10: 'D'}),
    'DS~7': (256, lambda op: [(0b110110 << 26) | (op << 17) | 0x0201, 0], {}),
    # FLAT segments: 0 flat, 1 scratch, 2 global (saddr s[12:13]).
    'FLAT': (128, lambda op: [(0b110111 << 26) | (op << 18) | (0 << 14), 20 | (30 << 8) | (10 << 24)],
             {10: 'D', 20: 'A', 30: 'S0'}),
    'SCRATCH': (128, lambda op: [(0b110111 << 26) | (op << 18) | (1 << 14) | (1 << 13), 20 | (30 << 8) | (12 << 16) | (10 << 24)],
                {10: 'D', 20: 'A', 30: 'S0', 12: 'SA'}),
    'GLOBAL': (128, lambda op: [(0b110111 << 26) | (op << 18) | (2 << 14), 20 | (30 << 8) | (12 << 16) | (10 << 24)],
               {10: 'D', 20: 'A', 30: 'S0', 12: 'SA'}),
    'MTBUF': (16, lambda op: [(0b111010 << 26) | (op << 15) | (1 << 12), 20 | (30 << 8) | (3 << 16) | (10 << 24)],
              {30: 'D', 20: 'A', 12: 'R', 10: 'SO'}),
    'MUBUF': (128, lambda op: [(0b111000 << 26) | (op << 18) | (1 << 12), 20 | (30 << 8) | (3 << 16) | (10 << 24)],
              {30: 'D', 20: 'A', 12: 'R', 10: 'SO'}),
    'MUBUF~1': (128, lambda op: [(0b111000 << 26) | (op << 18), 0], {}),  # buffer_wbl2, buffer_inv: no operands
}
MODIFIER = re.compile(r'^(format:.*|offen|idxen|lds|sc0|sc1|nt|glc|slc|gds|clamp|tfe|offset\d?:.*|op_sel.*|neg_.*|mul:\d|div:\d|cbsz:.*|abid:.*|blgp:.*)$')
REG = re.compile(r'^([sva])(\d+)$|^([sva])\[(\d+):(\d+)\]$')

INVALID = re.compile(r"([sva])(\d+|\[\d+:\d+\])/\*Invalid register, operand has '(\w+)' register class\*/")

def register_class_kind(cls):
    return 's' if cls.startswith('SReg') or cls.startswith('SGPR') else 'a' if cls.startswith('AReg') or cls.startswith('AGPR') else 'v'

def template(family, text, fields):
    """Turns 'v_add_f32_e32 v10, v20, v30' into ('v_add_f32_e32', 'D:v1 S0:v1 S1:v1')."""
    # A probe register of the wrong kind (a VGPR where the operand takes an SGPR) is printed with
    # an "Invalid register" note naming the operand's class: the class says the kind.
    text = INVALID.sub(lambda m: register_class_kind(m.group(3)) + m.group(2), text)
    mnemonic, _, rest = text.partition(' ')
    tokens = [t for t in re.split(r',?\s+', rest.strip()) if t] if rest else []
    out = []
    for t in tokens:
        if MODIFIER.match(t):
            continue
        m = REG.match(t)
        if m:
            kind = m.group(1) or m.group(3)
            first = int(m.group(2) or m.group(4))
            width = 1 if m.group(2) else int(m.group(5)) - first + 1
            field = fields.get(first)
            if field is None:  # tuples printed aligned down (s[8:11] for field 10)
                field = next((f for v, f in fields.items() if v // 4 * 4 == first and width >= 4 and kind == 's'), None)
            if field is None and family in ('MUBUF', 'MTBUF') and kind == 's' and first == 12:
                field = 'R'
            if field is not None:
                out.append('%s:%s%d' % (field, kind, width))
                continue
        if t in ('0xbf800000', '-1.0'):  # the probe's padding word, read as a literal constant
            out.append('K')
            continue
        out.append('=' + t)  # fixed text or an immediate the family printer re-derives
    return mnemonic, ' '.join(out)

# Which modifiers each VOP3 / VOP3P / memory opcode accepts, probed one bit at a time: LLVM
# rejects an encoding that sets a modifier its opcode lacks. op_sel (s) and gds (g) are
# accepted everywhere; their letters say where LLVM prints them.
MODIFIER_PROBES = {
    'VOP3': [('n', 1, 29), ('a', 0, 8), ('c', 0, 15), ('o', 1, 27), ('s', 0, 11)],
    # S: LLVM accepts op_sel at all; B: an MFMA takes abid (v_mfma_*_f8f6f4 does not)
    'VOP3P': [('c', 0, 15), ('n', 1, 29), ('S', 0, 11), ('B', 0, 11)],
    'DS': [('A', 0, 25), ('g', 0, 16), ('G', 0, 16)],  # g: gds printed, G: accepted at all
    # T: AGPR data with sc0, U: with sc0 and sc1 (LLVM lacks some returning FP atomics on AGPRs)
    'FLAT': [('A', 1, 23), ('T', 1, 23, 0, 16), ('U', 1, 23, 0, 16, 0, 25)], 'SCRATCH': [('A', 1, 23)],
    'GLOBAL': [('A', 1, 23), ('T', 1, 23, 0, 16), ('U', 1, 23, 0, 16, 0, 25)],
    'MUBUF': [('A', 1, 23), ('L', 0, 16)], 'MTBUF': [('A', 1, 23)],
}

def modifier_flags(family, build, ops, arch):
    """Flags per opcode: a letter for each modifier bit the oracle accepts (or prints) when set."""
    flags = {op: '' for op in ops}
    for letter, *bits in MODIFIER_PROBES.get(family.split('~')[0], []):
        cases = []
        for op in ops:
            ws = build(op)
            for word, bit in zip(bits[::2], bits[1::2]):
                ws[word] |= 1 << bit
            cases.append(ws)
        plain = probe([build(op) for op in ops], arch)
        for op, text, base in zip(ops, probe(cases, arch), plain):
            if text is not None and (letter not in 'sg' or text != base):
                flags[op] += letter
    return flags

# Which VOP1 / VOP2 / VOPC opcodes have an SDWA form (W) and a DPP form (P): the probe's src0
# names the extra dword (0xF9 SDWA, 0xFA DPP), which selects DWORD everywhere (SDWA) or the
# identity quad_perm with full masks (DPP).
SDWA_DPP_PROBES = {
    'VOP1': [('W', 0xF9, 0x00060614), ('P', 0xFA, 0xFF00E414)],
    'VOP2': [('W', 0xF9, 0x06060614), ('P', 0xFA, 0xFF00E414)],
    'VOPC': [('W', 0xF9, 0x06060614), ('P', 0xFA, 0xFF00E414)],
}

def encoding_flags(family, build, ops, arch):
    flags = {op: '' for op in ops}
    for letter, src0, extra in SDWA_DPP_PROBES.get(family, []):
        cases = []
        for op in ops:
            ws = build(op)
            ws[0] = (ws[0] & ~0x1FF) | src0
            cases.append(ws + [extra])
        suffix = '_sdwa' if letter == 'W' else '_dpp'
        for op, text in zip(ops, probe(cases, arch)):
            if text is not None and text.split()[0].endswith(suffix):
                flags[op] += letter
    return flags

# Where the lowest bit of each register field sits (word, bit), per family: flipping it makes the
# probe register odd, which is how LLVM's note on misaligned tuples is read off.
FIELD_BITS = {
    'VOP1': {'D': (0, 17), 'S0': (0, 0)},
    'VOP2': {'D': (0, 17), 'S0': (0, 0), 'S1': (0, 9)},
    'VOPC': {'S0': (0, 0), 'S1': (0, 9)},
    'VOP3': {'D': (0, 0), 'S0': (1, 0), 'S1': (1, 9), 'S2': (1, 18)},
    'DS': {'D': (1, 24), 'A': (1, 0), 'S0': (1, 8), 'S1': (1, 16)},
    'FLAT': {'D': (1, 24), 'A': (1, 0), 'S0': (1, 8)},
    'MUBUF': {'D': (1, 8), 'A': (1, 0)},
}
FIELD_BITS['VOP3P'] = FIELD_BITS['VOP3']
FIELD_BITS['GLOBAL'] = FIELD_BITS['SCRATCH'] = FIELD_BITS['FLAT']
FIELD_BITS['MTBUF'] = FIELD_BITS['MUBUF']
NOTE = re.compile(r"([sva])(?:(\d+)|\[(\d+):\d+\])/\*Invalid register, operand has '(\w+)' register class\*/")

def tuple_classes(family, build, fields, entries, arch):
    """For every VGPR/AGPR tuple operand of the given (op, template) entries, the register class
    LLVM names when the tuple starts on an odd register ('' if it prints it without a note)."""
    base = family.split('~')[0]
    bits = FIELD_BITS.get(base)
    if not bits:
        return {}
    value_of = {f: v for v, f in fields.items()}
    cases, keys = [], []
    for op, tmpl in entries:
        for tok in tmpl.split():
            m = re.match(r'^(\w+):([va])(\d+)$', tok)
            if not m or int(m.group(3)) < 2 or m.group(1) not in bits or m.group(1) not in value_of:
                continue
            word, bit = bits[m.group(1)]
            ws = build(op)
            ws[word] ^= 1 << bit
            cases.append(ws)
            keys.append((op, m.group(1), value_of[m.group(1)] + 1))
    out = {}
    for (op, field, odd), text in zip(keys, probe(cases, arch)):
        if text is None:
            continue
        cls = ''
        for m in NOTE.finditer(text):
            if int(m.group(2) or m.group(3)) == odd:
                cls = m.group(4)
        out[(op, field)] = cls
    return out

def annotate_tuples(tmpl, op, classes):
    """D:v2 -> D:v2@VReg_64_Align2 (the class of LLVM's note on an odd start) or D:v2@ (no note)."""
    def mark(tok):
        m = re.match(r'^(\w+):([va])(\d+)$', tok)
        if m and (op, m.group(1)) in classes:
            return tok + '@' + classes[(op, m.group(1))]
        return tok
    return ' '.join(mark(t) for t in tmpl.split())

# What LLVM makes of each kind of source code in each source field of each opcode: printed as
# usual ('.'), printed with a note calling a register invalid for the operand's class ('N'; the
# class is recorded once per operand), printed with "/*Invalid immediate*/" ('I'), or the whole
# word rejected ('R'). One probe per kind, its code in the field; the kinds are the letters of
# CODE_CLASSES (isa_fields.h's code_class() maps every code to one of them).
SOURCE_FIELDS = {  # family: {field: (word, lowest bit, bits)}
    'SOP2': {'S0': (0, 0, 8), 'S1': (0, 8, 8)},
    'SOP1': {'S0': (0, 0, 8)},
    'SOPC': {'S0': (0, 0, 8), 'S1': (0, 8, 8)},
    'VOP1': {'S0': (0, 0, 9)}, 'VOP2': {'S0': (0, 0, 9)}, 'VOPC': {'S0': (0, 0, 9)},
    'VOP3': {'S0': (1, 0, 9), 'S1': (1, 9, 9), 'S2': (1, 18, 9)},
}
# Scalar destinations probed like sources: v_cmp*_e64's sdst, v_readfirstlane_b32's.
SCALAR_DESTINATIONS = {'VOP3': {'D': (0, 0, 8)}, 'VOP1': {'D': (0, 17, 8)}}
SOURCE_FIELDS['VOP3P'] = SOURCE_FIELDS['VOP3']
SOURCE_FIELDS['SMEM'] = {'D': (0, 6, 7)}  # the data registers: which special registers LLVM takes
SOURCE_FIELDS['GLOBAL'] = SOURCE_FIELDS['SCRATCH'] = {'SA': (1, 16, 7)}  # saddr (127 is "off")
# s20, vcc_lo, m0, null, exec_lo, the integer 1, 1.0, a literal, src_lds_direct, src_execz,
# src_shared_base, src_flat_scratch_base_lo, v20.
CODE_CLASSES = [('s', 20), ('c', 106), ('m', 124), ('n', 125), ('e', 126), ('i', 129), ('f', 242), ('k', 255),
                ('l', 254), ('z', 252), ('a', 235), ('b', 230), ('V', 276)]
LITERAL = 0x12345678
NOTES = re.compile(r"/\*Invalid (?:register, operand has '(\w+)' register class|immediate)\*/")

def new_notes(text, base):
    """The notes in a probe's text that its base probe did not have: [(class or None), ...]."""
    seen = [m.group(1) for m in NOTES.finditer(base or '')]
    out = []
    for m in NOTES.finditer(text):
        if m.group(1) in seen:
            seen.remove(m.group(1))
        else:
            out.append(m.group(1))
    return out

def source_classes(family, build, entries, arch):
    """{(op, field): (13 letters, note class)} for the source operands of (op, template) entries."""
    base = family.split('~')[0]
    layout = dict(SOURCE_FIELDS.get(base, {}), **SCALAR_DESTINATIONS.get(base, {}))
    if not layout:
        return {}
    keys, cases, bases = [], [], {}
    for op, tmpl in entries:
        bases[op] = build(op)
        for tok in tmpl.split():
            field = tok.split(':')[0]
            if field not in layout or (field in SCALAR_DESTINATIONS.get(base, {}) and not tok.startswith(field + ':s')):
                continue
            word, low, nbits = layout[field]
            for letter, code in CODE_CLASSES:
                if code >= 1 << nbits or (code == 255 and word == 1):
                    continue  # VOP3 literals crash llvm-objdump-22; weft declines them
                ws = build(op)
                ws[word] = (ws[word] & ~(((1 << nbits) - 1) << low)) | (code << low)
                if code == 255:
                    ws = ws + [LITERAL]
                cases.append(ws)
                keys.append((op, field, letter))
    base_text = dict(zip(bases, probe(list(bases.values()), arch)))
    out = {}
    for (op, field, letter), text in zip(keys, probe(cases, arch)):
        letters, cls = out.get((op, field), ({l: '.' for l, _ in CODE_CLASSES}, ''))
        if text is None:
            letters[letter] = 'R'
        elif text != CRASH:
            notes = new_notes(text, base_text[op])
            if any(n is None for n in notes):
                letters[letter] = 'I'
            elif notes:
                letters[letter], cls = 'N', notes[0]
        out[(op, field)] = (letters, cls)
    for letters, _ in out.values():
        if letters['k'] == '.':
            letters['k'] = letters['i']  # literals not probed (VOP3): as the integer constants
    return {k: (''.join(v[0][l] for l, _ in CODE_CLASSES), v[1]) for k, v in out.items()}

# VOP3 source modifiers, one source at a time, for all three sources (LLVM accepts some on
# sources an opcode does not have): neg (word 1 bit 29+i) and abs (word 0 bit 8+i) are printed
# ('p'), accepted and ignored ('i', as on v_ldexp's integer exponent) or rejected ('r'); VOP3b
# keeps sdst where abs would be ('-'). {op: (neg modes, abs modes)}
def vop3_source_modifiers(family, build, entries, arch):
    if family != 'VOP3':
        return {}
    keys, cases, bases = [], [], {}
    for op, tmpl in entries:
        bases[op] = build(op)
        vop3b = ' SD:' in ' ' + tmpl
        for i in range(3):
            for kind, word, bit in (('n', 1, 29 + i), ('a', 0, 8 + i)):
                if kind == 'a' and vop3b:
                    continue
                ws = build(op)
                ws[word] |= 1 << bit
                cases.append(ws)
                keys.append((op, i, kind))
    base_text = dict(zip(bases, probe(list(bases.values()), arch)))
    out = {}
    for (op, i, kind), text in zip(keys, probe(cases, arch)):
        modes = out.setdefault(op, {'n': ['-'] * 3, 'a': ['-'] * 3})
        modes[kind][i] = 'r' if text is None else 'i' if text == base_text[op] else 'p'
    return {op: (''.join(m['n']), ''.join(m['a'])) for op, m in out.items()}

# VOP3 op_sel, one bit (word 0 bit 11+b) at a time: where LLVM prints it in its op_sel:[...] list
# (a digit; the list's length once per opcode), or that it ignores ('i') or rejects ('r') it.
OPSEL = re.compile(r'op_sel:\[([01,]+)\]')

def vop3_opsel(family, build, ops, arch):
    if family != 'VOP3':
        return {}
    cases = []
    for op in ops:
        for b in range(4):
            ws = build(op)
            ws[0] |= 1 << (11 + b)
            cases.append(ws)
    texts = probe(cases, arch)
    out = {}
    for k, op in enumerate(ops):
        length, marks = 0, ''
        for b in range(4):
            text = texts[4 * k + b]
            m = OPSEL.search(text or '')
            if text is None:
                marks += 'r'
            elif not m:
                marks += 'i'
            else:
                bits = m.group(1).split(',')
                length = len(bits)
                marks += str(bits.index('1'))
        if marks != 'iiii':
            out[op] = '%d:%s' % (length, marks)
    return out

def annotate_sources(tmpl, op, classes):
    """S0:v1 -> S0:v1#<classes>'<note class> (the note class only where there is one)."""
    def mark(tok):
        field = tok.split(':')[0]
        if (op, field) in classes:
            letters, cls = classes[(op, field)]
            tok += '#' + letters + ("'" + cls if cls else '')
        return tok
    return ' '.join(mark(t) for t in tmpl.split())

def main():
    rows = {}
    for arch in ARCHS:
        found = {}
        sopp_zero = probe([FAMILIES['SOPP0'][1](op) for op in range(128)], arch)
        for family, (count, build, fields) in FAMILIES.items():
            texts = probe([build(op) for op in range(count)], arch)
            flags = modifier_flags(family, build, [op for op in range(count) if texts[op]], arch)
            extra_forms = encoding_flags(family, build, [op for op in range(count) if texts[op]], arch)
            entries = [(op, template(family, t, fields)[1]) for op, t in enumerate(texts) if t]
            classes = tuple_classes(family, build, fields, entries, arch)
            sources = source_classes(family, build, entries, arch)
            source_mods = vop3_source_modifiers(family, build, entries, arch)
            opsel = vop3_opsel(family, build, [op for op in range(count) if texts[op]], arch)
            for op, text in enumerate(texts):
                if text is None:
                    continue
                if family == 'VOP3' and (op >> 7) == 0b111:
                    continue  # the VOP3P space, probed on its own
                if (family == 'SOP2' and op >= 0x60) or (family == 'SOPK' and op >= 0x1b):
                    continue  # these words belong to SOPK / SOP1 / SOPC / SOPP
                mnemonic, tmpl = template(family, text, fields)
                tmpl = annotate_tuples(tmpl, op, classes)
                tmpl = annotate_sources(tmpl, op, sources)
                if op in source_mods:
                    tmpl += ' %%neg=%s %%abs=%s' % source_mods[op]
                if op in opsel:
                    tmpl += ' %opsel=' + opsel[op]
                if family.split('~')[0] in MODIFIER_PROBES:
                    tmpl = ('!' + flags[op] + ' ' + tmpl).strip()
                if family == 'VOP1~1':
                    tmpl = ('!Z ' + tmpl).strip()  # found only with vdst 0: LLVM rejects other values
                if extra_forms.get(op):
                    tmpl = ('!' + extra_forms[op] + ' ' + tmpl).strip()
                if family == 'SOPP' and tmpl and ' ' not in (sopp_zero[op] or ' x'):
                    tmpl = '!z ' + tmpl  # LLVM omits the immediate when it is 0 (s_endpgm)
                row_family = family
                if family == 'SOPP0' or '~' in family:  # further probes, for opcodes the first missed
                    row_family = 'SOPP' if family == 'SOPP0' else family.split('~')[0]
                    if op in found.get(row_family, set()):
                        continue
                found.setdefault(row_family, set()).add(op)
                if row_family == 'SMEM' and '=0x40' not in tmpl:
                    tmpl = ('!I ' + tmpl).strip()  # LLVM rejects these with the imm bit set
                rows.setdefault((row_family, op, mnemonic, tmpl), set()).add(arch)
    # The 16-byte scaled f8f6f4 MFMAs (a v_mfma_ld_scale_b32 word, then the MFMA word with abid
    # 1; docs/mfma-f8f6f4.md 1.4) are not words the 8-byte probes can find: a row for each at
    # opcode 0x100 | the MFMA's, with the MFMA's operands (decode.cpp joins the two words and
    # disasm.cpp prints the scale sources after the MFMA's).
    for (family, op, mnemonic, tmpl), archs in list(rows.items()):
        if family == 'VOP3P' and mnemonic.startswith('v_mfma_f32_') and mnemonic.endswith('_f8f6f4'):
            rows.setdefault((family, 0x100 | op, mnemonic.replace('v_mfma_', 'v_mfma_scale_', 1), tmpl), set()).update(archs)
    print('// Generated by tools/isa/gen_isa_tables.py from llvm-objdump-22; do not edit.')
    print('// family, opcode, targets (1 gfx942, 2 gfx950), mnemonic, operand template')
    for (family, op, mnemonic, tmpl), archs in sorted(rows.items()):
        mask = (1 if 'gfx942' in archs else 0) | (2 if 'gfx950' in archs else 0)
        print('{Family::%s, 0x%03x, %d, "%s", "%s"},' % (family, op, mask, mnemonic, tmpl))

if __name__ == '__main__':
    main()
