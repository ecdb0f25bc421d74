// The one check every external data reference passes before anything opens its file: the ONNX reader, the model
// writer and `fix --autocast` call it. The location is resolved against the folder of the model that names it (never
// a temporary folder the model was copied to), must stay inside that folder (external_data_location.h), and must name
// a regular file; offset and length are decimal numbers; the byte range lies inside the file; and where the tensor's
// dims and element type fix its size, the range holds exactly that many bytes (no short copy, no allocation larger
// than the tensor). Internal to parsers/ and src/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qdq
{

//! A tensor's external_data entries as the model writes them (text), with the tensor's shape and type.
struct ExternalDataEntries
{
    std::string tensor; //!< the tensor's name, for messages
    std::string location;
    std::optional<std::string> offset;
    std::optional<std::string> length;
    int dataType = 0;
    std::vector<std::int64_t> dims;
};

//! The byte range a checked reference names.
struct CheckedExternalData
{
    std::filesystem::path file; //!< resolved, inside the model's folder, a regular file when checked
    std::uint64_t fileSize = 0;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
};

//! A non-negative decimal integer of 1 to 18 digits (it fits in an int64), or nullopt for anything else: a sign, a
//! space, "abc", a 23-digit number.
std::optional<std::uint64_t> parseExternalDataNumber(std::string_view text);

//! Bytes a tensor of dataType and dims holds in raw form, or nullopt when the type has no fixed size (string,
//! complex, unknown), a dim is negative, or the product overflows.
std::optional<std::uint64_t> tensorRawBytes(int dataType, const std::vector<std::int64_t>& dims);

//! Checks a reference of the model at modelPath, whose external data lives in dataFolder (the model's own folder).
//! Throws InputError naming modelPath when the reference itself is wrong (no location, an absolute one, a '..', a
//! link out of the folder, offset or length not a number) and the data file when the file is missing, not a regular
//! file, or too short for the range or for the tensor's size. With length given it must equal the tensor's size where
//! that is known; without it the range is the tensor's size (or the rest of the file when the size is not known).
CheckedExternalData checkExternalData(const std::string& modelPath, const std::filesystem::path& dataFolder,
                                      const ExternalDataEntries& entries);

//! The (offset, length) of entries in a data file of fileSize bytes, checked as checkExternalData checks them (for a
//! caller that opened the file itself: the model writer).
std::pair<std::uint64_t, std::uint64_t> checkedExternalRange(const std::string& modelPath, const std::string& dataFile,
                                                             std::uint64_t fileSize,
                                                             const ExternalDataEntries& entries);

//! Reads a checked range (the file opened without blocking and checked again to be a regular file of at least the
//! size seen). Throws InputError naming the data file.
std::string readExternalData(const CheckedExternalData& data, const std::string& tensor);

} // namespace qdq
