/// The models the commands accept as their first argument.
enum ModelName: String, CaseIterable {
    case issues
}
