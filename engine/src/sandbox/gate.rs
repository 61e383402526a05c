//! What user SQL may do, decided on the engine's own parse of the statement.
//!
//! Nothing here reads SQL text. The input is the tree the engine printed for
//! `EXPLAIN AST <statement>` (run only after `chdb_classify_query_n` counted
//! exactly one statement and classed it), one node per line,
//! indented by one space per level:
//!
//! ```text
//! SelectWithUnionQuery (children 1)
//!  ExpressionList (children 1)
//!   SelectQuery (children 2)
//!    ...
//!      TableExpression (children 1)
//!       Function file (children 1)
//! ```
//!
//! The engine enforces the rest itself (readonly=1, grants). These rules cover
//! what it does not: the scalar `file()` function (readonly and grants do not
//! stop it in the embedded engine), the `system` database (not access-controlled
//! in the embedded engine: `system.processes` shows every connection's query
//! text), and, as a second line behind readonly, table functions outside a
//! small allow-list.

/// One node of the printed tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    /// Nesting level; the root is 0.
    pub(crate) depth: usize,
    /// The node type as printed (`SelectQuery`, `Function`, `TableIdentifier`).
    pub(crate) kind: String,
    /// What follows the type, without `(alias …)` and `(children N)`.
    pub(crate) name: String,
    /// Index of the parent node.
    pub(crate) parent: Option<usize>,
}

/// Parses the engine's `EXPLAIN AST` output; `None` if it is not a tree of
/// the expected shape (then nothing is allowed).
pub(crate) fn parse_tree(text: &str) -> Option<Vec<Node>> {
    let mut nodes: Vec<Node> = Vec::new();
    // Index of the last node at each depth.
    let mut last_at: Vec<usize> = Vec::new();
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        let body = line.trim_start_matches(' ');
        let depth = line.len() - body.len();
        if nodes.is_empty() {
            if depth != 0 {
                return None;
            }
        } else if depth == 0 || depth > last_at.len() {
            // A second root, or a jump of more than one level.
            return None;
        }
        let (kind, rest) = body.split_once(' ').unwrap_or((body, ""));
        if kind.is_empty()
            || !kind.starts_with(|c: char| c.is_ascii_alphabetic())
            || !kind.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return None;
        }
        let mut name = rest;
        if let Some(i) = name.rfind(" (children ") {
            name = &name[..i];
        } else if let Some(stripped) = name.strip_prefix("(children ") {
            if stripped.ends_with(')') {
                name = "";
            }
        }
        if let Some(i) = name.find(" (alias ") {
            name = &name[..i];
        } else if name.starts_with("(alias ") {
            name = "";
        }
        let parent = if depth == 0 {
            None
        } else {
            Some(last_at[depth - 1])
        };
        last_at.truncate(depth);
        last_at.push(nodes.len());
        nodes.push(Node {
            depth,
            kind: kind.to_string(),
            name: name.trim().to_string(),
            parent,
        });
    }
    (!nodes.is_empty()).then_some(nodes)
}

/// Statement types a non-admin may run.
const READER_ROOTS: &[&str] = &[
    "SelectWithUnionQuery",
    "SelectIntersectExceptQuery",
    "Explain",
    "DescribeQuery",
    // SHOW TABLES, SHOW DATABASES, SHOW SETTINGS: filtered by grants.
    "ShowTables",
    "ShowColumns",
    "ExistsTableQuery",
];

/// Table functions a non-admin may use: generators and views over the
/// engine's own tables (which the grants check).
const READER_TABLE_FUNCTIONS: &[&str] = &[
    "numbers",
    "numbers_mt",
    "zeros",
    "zeros_mt",
    "generate_series",
    "generateseries",
    "values",
    "view",
    "null",
    "generaterandom",
];

/// Functions nobody without admin rights may call, wherever they appear:
/// `file` reads a file as the server's user (scalar form: neither readonly nor
/// grants stop it in the embedded engine); the others reach files, URLs, other
/// hosts or programs (readonly and grants stop their table forms already; they
/// are listed so a second layer stops them too).
const DENIED_FUNCTIONS: &[&str] = &[
    "file",
    "filecluster",
    "url",
    "urlcluster",
    "s3",
    "s3cluster",
    "gcs",
    "hdfs",
    "hdfscluster",
    "azureblobstorage",
    "azureblobstoragecluster",
    "remote",
    "remotesecure",
    "cluster",
    "clusterallreplicas",
    "mysql",
    "postgresql",
    "sqlite",
    "mongodb",
    "redis",
    "odbc",
    "jdbc",
    "executable",
    "input",
    "dictionary",
    "merge",
    "loop",
    "catboostevaluate",
    "naivebayesclassifier",
];

/// `system` tables a non-admin may read: generators, and the catalogue tables
/// the engine filters by grants.
const READER_SYSTEM_TABLES: &[&str] = &[
    "one",
    "numbers",
    "numbers_mt",
    "zeros",
    "zeros_mt",
    "databases",
    "tables",
    "columns",
    "functions",
    "table_functions",
    "data_type_families",
    "formats",
    "time_zones",
    "settings",
];

/// The statement's own `FORMAT` clause, if it has one: an `Identifier`
/// directly under a `SelectWithUnionQuery` root (where the engine keeps the
/// output format of a query). The answer's format is the request's (`format`
/// parameter or `Accept`), which the response is labelled with and re-joined
/// by, so a clause choosing another one is refused.
pub(crate) fn format_clause(nodes: &[Node]) -> Option<&str> {
    if nodes[0].kind != "SelectWithUnionQuery" {
        return None;
    }
    nodes
        .iter()
        .find(|n| n.parent == Some(0) && n.kind == "Identifier")
        .map(|n| n.name.as_str())
}

/// Why a statement is refused to a non-admin, if it is.
pub(crate) fn reader_violation(nodes: &[Node]) -> Option<String> {
    let root = &nodes[0];
    if !READER_ROOTS.contains(&root.kind.as_str()) {
        return Some(format!(
            "read-only users may run SELECT, EXPLAIN, DESCRIBE, SHOW TABLES/DATABASES/COLUMNS \
             and EXISTS statements; the engine parsed this one as {}",
            root.kind
        ));
    }
    for node in nodes {
        match node.kind.as_str() {
            "Function" => {
                let name = node.name.split(' ').next().unwrap_or("");
                let lower = name.to_ascii_lowercase();
                if DENIED_FUNCTIONS.contains(&lower.as_str()) {
                    return Some(format!(
                        "function {name}() reaches outside the engine's tables (files, URLs, \
                         other hosts) and is not available to read-only users"
                    ));
                }
                let in_from = node
                    .parent
                    .is_some_and(|p| nodes[p].kind == "TableExpression");
                if in_from && !READER_TABLE_FUNCTIONS.contains(&lower.as_str()) {
                    return Some(format!(
                        "table function {name}() is not available to read-only users \
                         (allowed: numbers, zeros, generate_series, values, view, null, generateRandom)"
                    ));
                }
            }
            "TableIdentifier" | "Identifier" => {
                let Some((db, table)) = node.name.split_once('.') else {
                    continue;
                };
                if db.eq_ignore_ascii_case("system")
                    && !READER_SYSTEM_TABLES.contains(&table.to_ascii_lowercase().as_str())
                {
                    return Some(format!(
                        "system.{table} is not available to read-only users (it shows the \
                         engine's state and other sessions' queries); allowed: system.{}",
                        READER_SYSTEM_TABLES.join(", system.")
                    ));
                }
            }
            _ => {}
        }
    }
    None
}

/// Why a statement is refused to an admin, if it is.
pub(crate) fn admin_violation(nodes: &[Node]) -> Option<String> {
    if nodes[0].kind == "SYSTEM" {
        return Some(
            "SYSTEM statements are not accepted over HTTP (SYSTEM SHUTDOWN would stop the \
             server's engine)"
                .to_string(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(text: &str) -> Vec<Node> {
        parse_tree(text).unwrap_or_else(|| panic!("not a tree: {text}"))
    }

    // Outputs as the engine printed them (26.7.3).
    const FILE_IN_FROM: &str = "SelectWithUnionQuery (children 1)\n ExpressionList (children 1)\n  SelectQuery (children 2)\n   ExpressionList (children 1)\n    Asterisk\n   TablesInSelectQuery (children 1)\n    TablesInSelectQueryElement (children 1)\n     TableExpression (children 1)\n      Function file (children 1)\n       ExpressionList (children 2)\n        Literal '/etc/hostname'\n        Literal 'LineAsString'\n";
    const MERGE: &str = "SelectWithUnionQuery (children 1)\n ExpressionList (children 1)\n  SelectQuery (children 3)\n   ExpressionList (children 1)\n    Asterisk\n   TablesInSelectQuery (children 1)\n    TablesInSelectQueryElement (children 1)\n     TableExpression (children 1)\n      Function merge (alias x) (children 1)\n       ExpressionList (children 2)\n        Literal 'system'\n        Literal 'proc'\n";
    const IN_SYSTEM: &str = "SelectWithUnionQuery (children 1)\n ExpressionList (children 1)\n  SelectQuery (children 2)\n   ExpressionList (children 1)\n    Literal UInt64_1\n   Function in (children 1)\n    ExpressionList (children 2)\n     Literal UInt64_1\n     Identifier system.processes\n";
    const SCALAR_FILE_UPPER: &str = "SelectWithUnionQuery (children 1)\n ExpressionList (children 1)\n  SelectQuery (children 1)\n   ExpressionList (children 2)\n    Literal 'a\\tb\\nc'\n    Function FILE (children 1)\n     ExpressionList (children 1)\n      Literal 'x'\n";
    const WEIRD_NAMES: &str = "SelectWithUnionQuery (children 1)\n ExpressionList (children 1)\n  SelectQuery (children 2)\n   ExpressionList (children 1)\n    Identifier my tab.x\n   TablesInSelectQuery (children 1)\n    TablesInSelectQueryElement (children 1)\n     TableExpression (children 1)\n      TableIdentifier we ird.my tab\n";

    #[test]
    fn trees_parse_with_parents_names_and_aliases() {
        let t = tree(MERGE);
        let f = t.iter().position(|n| n.kind == "Function").unwrap();
        assert_eq!(t[f].name, "merge");
        assert_eq!(t[t[f].parent.unwrap()].kind, "TableExpression");
        assert_eq!(t[0].parent, None);
        let w = tree(WEIRD_NAMES);
        assert_eq!(w.last().unwrap().name, "we ird.my tab");
        assert_eq!(tree("ShowTables\n")[0].kind, "ShowTables");
        assert_eq!(
            tree("Explain EXPLAIN (children 1)\n SelectWithUnionQuery\n")[0].name,
            "EXPLAIN"
        );
    }

    #[test]
    fn what_is_not_a_tree_is_refused() {
        for bad in [
            "",
            "\n",
            " SelectQuery\n",
            "SelectQuery\nSelectQuery\n",
            "SelectQuery\n   Literal 1\n",
            "{\"meta\": []}\n",
            "Row 1:\n──────\n",
            "\"explain\"\n",
        ] {
            assert_eq!(parse_tree(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn reader_rules() {
        let why = |t: &str| reader_violation(&tree(t));
        assert!(why(FILE_IN_FROM).unwrap().contains("file()"));
        assert!(why(MERGE).unwrap().contains("merge()"));
        assert!(why(IN_SYSTEM).unwrap().contains("system.processes"));
        assert!(why(SCALAR_FILE_UPPER).unwrap().contains("FILE()"));
        assert_eq!(why(WEIRD_NAMES), None);
        assert!(why("ShowProcesslistQuery\n")
            .unwrap()
            .contains("ShowProcesslistQuery"));
        assert!(why("SYSTEM query\n").is_some());
        assert_eq!(why("ShowTables (children 1)\n Identifier system\n"), None);
        assert_eq!(
            why("DescribeQuery (children 1)\n TableExpression (children 1)\n  TableIdentifier system.tables\n"),
            None
        );
        assert!(why("DescribeQuery (children 1)\n TableExpression (children 1)\n  TableIdentifier SYSTEM.Processes\n").is_some());
        assert!(why("SelectWithUnionQuery (children 1)\n TableExpression (children 1)\n  Function url (children 1)\n").is_some());
        assert_eq!(
            why("SelectWithUnionQuery (children 1)\n TableExpression (children 1)\n  Function numbers (children 1)\n"),
            None
        );
    }

    #[test]
    fn a_format_clause_is_found_at_the_root_only() {
        let with_format = "SelectWithUnionQuery (children 2)\n ExpressionList (children 1)\n  SelectQuery (children 1)\n   ExpressionList (children 1)\n    Identifier x\n Identifier JSON\n";
        assert_eq!(format_clause(&tree(with_format)), Some("JSON"));
        assert_eq!(format_clause(&tree(WEIRD_NAMES)), None);
        assert_eq!(
            format_clause(&tree("ShowTables (children 1)\n Identifier system\n")),
            None
        );
    }

    #[test]
    fn admins_may_do_anything_but_system() {
        assert!(admin_violation(&tree("SYSTEM query\n")).is_some());
        assert_eq!(admin_violation(&tree(FILE_IN_FROM)), None);
    }
}
