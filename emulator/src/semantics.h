// The instruction semantics, registered by mnemonic. Each family's file fills the table.
#pragma once

#include <string>
#include <unordered_map>

#include "wave.h"

namespace weft::emu {

using SemanticsTable = std::unordered_map<std::string, Handler>;

void register_scalar_semantics(SemanticsTable& t);
void register_vector_semantics(SemanticsTable& t);
void register_memory_semantics(SemanticsTable& t);
void register_half_semantics(SemanticsTable& t);  // after the vector ones: its entries replace theirs
void register_float_special_semantics(SemanticsTable& t);
void register_fp8_semantics(SemanticsTable& t);
void register_transpose_semantics(SemanticsTable& t);
void register_typed_buffer_semantics(SemanticsTable& t);
void register_mode_semantics(SemanticsTable& t);

// The MODE register a wave starts with, from the kernel descriptor's COMPUTE_PGM_RSRC1
// (semantics_mode.cpp).
uint32_t initial_mode(uint32_t rsrc1);

}  // namespace weft::emu
