/// Path arithmetic on strings (what `NSString`'s path methods gave, without linking Foundation).
package enum FilePaths {
    /// The directory part of `path`: `"/etc/pc/apps.json"` → `"/etc/pc"`, `"/apps.json"` → `"/"`,
    /// `"apps.json"` → `""`. Trailing slashes are ignored.
    package static func directory(of path: String) -> String {
        var path = Substring(path)
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        guard let slash = path.lastIndex(of: "/") else { return "" }
        if slash == path.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// `file` inside `directory`, with one slash between them.
    package static func join(_ directory: String, _ file: String) -> String {
        directory.hasSuffix("/") ? directory + file : directory + "/" + file
    }
}
