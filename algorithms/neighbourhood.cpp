// Cartesian neighbour lists (neighbourhood.hpp).
#include "neighbourhood.hpp"

namespace loom {

std::vector<int> cartesian_neighbours(std::span<const int> dims, std::span<const int> periods, int rank)
{
    std::vector<int> out;
    out.reserve(2 * dims.size());
    // Row-major: the last dimension varies fastest, so its stride is 1.
    int stride = 1;
    std::vector<int> strides(dims.size());
    for (std::size_t d = dims.size(); d-- > 0;) {
        strides[d] = stride;
        stride *= dims[d];
    }
    for (std::size_t d = 0; d < dims.size(); ++d) {
        const int coord = (rank / strides[d]) % dims[d];
        for (int step : {-1, +1}) {
            int c = coord + step;
            if (c < 0 || c >= dims[d]) {
                if (periods[d] == 0) {
                    out.push_back(kNoNeighbour);
                    continue;
                }
                c = (c + dims[d]) % dims[d];
            }
            out.push_back(rank + (c - coord) * strides[d]);
        }
    }
    return out;
}

} // namespace loom
