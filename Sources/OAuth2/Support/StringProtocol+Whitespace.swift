extension StringProtocol {
    /// The text without the whitespace and line breaks around it: how a
    /// pasted redirect URL or a key from the environment is read.
    var trimmingSurroundingWhitespace: SubSequence {
        guard let first = firstIndex(where: { !$0.isWhitespace }),
              let last = lastIndex(where: { !$0.isWhitespace })
        else { return self[endIndex...] }
        return self[first...last]
    }
}
