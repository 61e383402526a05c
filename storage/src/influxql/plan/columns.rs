//! The output columns of a plan: raw values (wildcards expanded),
//! aggregates, selectors and `top`/`bottom`, with their names.

use std::collections::BTreeSet;

use super::*;

/// Raw columns (wildcards expanded) and the fields whose presence makes a
/// point part of the answer.
pub(super) fn raw_columns(
    stmt: &SelectStatement,
    scope: &mut Scope<'_>,
    all: &MeasurementSchema,
    group_tags: &[String],
) -> Result<(Vec<Column>, Vec<String>), InfluxqlError> {
    let mut columns = Vec::new();
    let mut nonnull = Vec::new();
    let schema = scope.schema;
    for f in &stmt.fields {
        match strip_parens(&f.expr) {
            Expr::VarRef { name, .. } if name.eq_ignore_ascii_case("time") => {}
            Expr::Wildcard(restrict) => {
                for (name, is_field) in expand(all, *restrict, None, group_tags) {
                    let t = scope.value_ref(&name, None);
                    if is_field {
                        nonnull.push(t.sql.clone());
                    }
                    columns.push(Column::raw(name, t.sql));
                }
            }
            Expr::Literal(Literal::Regex(re)) => {
                let re = crate::influxql::schema::compile(&re.0)?;
                for (name, is_field) in expand(all, None, Some(&re), group_tags) {
                    let t = scope.value_ref(&name, None);
                    if is_field {
                        nonnull.push(t.sql.clone());
                    }
                    columns.push(Column::raw(name, t.sql));
                }
            }
            e if transform_parts(e).is_some() => {
                let (name, args, scale) = transform_parts(e).expect("a transformation");
                if let Some((_, calls)) = expand_call(strip_parens(e), all)? {
                    // `elapsed(*)`: one column per field, named `elapsed_f`.
                    for call in calls {
                        let Expr::VarRef { name: field, .. } = &call[0] else {
                            continue;
                        };
                        let t = scope.value(&call[0])?;
                        if t.kind != expr::Kind::Null {
                            nonnull.push(t.sql.clone());
                        }
                        let transform = transform_of(name, &call, scale.clone())?;
                        let column = Column::raw(format!("{name}_{field}"), t.sql);
                        columns.push(column.transformed(transform));
                    }
                    continue;
                }
                let t = scope.value(&args[0])?;
                if name != "elapsed" {
                    // InfluxDB refuses to build these over strings and
                    // booleans, naming its iterator (one per pair).
                    if let Some(t) = t.kind.non_numeric_name() {
                        let iterator = match name {
                            "non_negative_derivative" => "derivative",
                            "non_negative_difference" => "difference",
                            "cumulative_sum" => "cumulative sum",
                            "moving_average" => "moving average",
                            other => other,
                        };
                        return Err(InfluxqlError::invalid(format!(
                            "unsupported {iterator} iterator type: *query.{t}InterruptIterator"
                        )));
                    }
                }
                if t.kind != expr::Kind::Null {
                    nonnull.push(t.sql.clone());
                }
                let transform = transform_of(name, args, scale)?;
                columns.push(Column::raw(column_name(f), t.sql).transformed(transform));
            }
            e => {
                let before = scope.fields.clone();
                let t = scope.value(e)?;
                let reads_field =
                    scope.fields.len() > before.len() || fields_in(e, schema).next().is_some();
                if reads_field && t.kind != expr::Kind::Null {
                    nonnull.push(t.sql.clone());
                }
                columns.push(Column::raw(column_name(f), t.sql));
            }
        }
    }
    dedup_names(&mut columns);
    Ok((columns, nonnull))
}

/// Fields named in `e`.
pub(super) fn fields_in<'a>(
    e: &'a Expr,
    schema: &'a MeasurementSchema,
) -> impl Iterator<Item = &'a str> {
    let mut names = Vec::new();
    collect_names(e, &mut names);
    names
        .into_iter()
        .filter(move |n| schema.fields.iter().any(|(f, _)| f == n))
}

pub(super) fn collect_names<'a>(e: &'a Expr, out: &mut Vec<&'a str>) {
    match e {
        Expr::VarRef { name, .. } => out.push(name),
        Expr::Binary { lhs, rhs, .. } => {
            collect_names(lhs, out);
            collect_names(rhs, out);
        }
        Expr::Paren(inner) => collect_names(inner, out),
        Expr::Call { args, .. } => args.iter().for_each(|a| collect_names(a, out)),
        _ => {}
    }
}

/// `*`, `*::field`, `*::tag` or `/re/` as (name, is a field), sorted by name;
/// `GROUP BY` tags are left out (they are the series' tags).
pub(super) fn expand(
    schema: &MeasurementSchema,
    restrict: Option<DataType>,
    re: Option<&regex::Regex>,
    group_tags: &[String],
) -> Vec<(String, bool)> {
    let mut out: Vec<(String, bool)> = Vec::new();
    if restrict != Some(DataType::Tag) {
        out.extend(schema.fields.iter().map(|(f, _)| (f.clone(), true)));
    }
    if restrict != Some(DataType::Field) {
        out.extend(
            schema
                .tag_keys
                .iter()
                .filter(|k| !group_tags.contains(k))
                .map(|k| (k.clone(), false)),
        );
    }
    out.retain(|(n, _)| re.is_none_or(|re| re.is_match(n)));
    out.sort();
    out
}

/// Aggregate columns and the aggregate part of the plan.
pub(super) fn aggregate_columns(
    stmt: &SelectStatement,
    scope: &mut Scope<'_>,
    all: &MeasurementSchema,
) -> Result<(Vec<Column>, Aggregate), InfluxqlError> {
    let window = window(stmt)?;
    let selector = lone_selector(stmt).then(|| {
        stmt.fields
            .iter()
            .map(|f| strip_parens(&f.expr))
            .find_map(|e| match e {
                Expr::Call { name, args } => Some((name.as_str(), args.as_slice())),
                _ => None,
            })
    });
    let selector = selector.flatten();
    if let Some((name, args)) = lone_top(stmt) {
        let columns = top_columns(stmt, scope, name, args)?;
        return Ok((
            columns,
            Aggregate {
                window,
                point_time: None,
                fields: scope.fields.iter().cloned().collect(),
                fill: Fill::None,
                zone: zone(stmt)?,
                presence: Presence::InSql,
            },
        ));
    }
    let mut columns = Vec::new();
    // Per column, the field it aggregates when it is null exactly where the
    // group has none of that field's values (`Presence`).
    let mut valueless: Vec<Option<String>> = Vec::new();
    for f in &stmt.fields {
        let e = strip_parens(&f.expr);
        if let Some((name, args)) = expand_call(e, all)? {
            // `mean(*)`, `max(/re/)`: one column per field, named `mean_f`.
            for field in args {
                let t = agg::call(scope, name, &field)?;
                let Expr::VarRef { name: fname, .. } = &field[0] else {
                    continue;
                };
                valueless.push(null_where_valueless(scope, name, &field));
                columns.push(Column::aggregate(
                    format!("{name}_{fname}"),
                    t,
                    name == "count",
                ));
            }
            continue;
        }
        let t = match (e, selector) {
            (Expr::VarRef { name, .. }, _) if name.eq_ignore_ascii_case("time") => continue,
            (Expr::VarRef { name, data_type }, Some((sel, args))) => {
                let column = scope.value_ref(name, *data_type);
                agg::selector_aux(scope, sel, args, &column)?.unwrap_or_else(Typed::null)
            }
            (Expr::Call { name, args }, _) if name == "mode" || name == "distinct" => {
                let Some(q) = agg::field(scope, agg::field_arg(name, args)?)? else {
                    continue;
                };
                let reducer = Reducer {
                    function: name.clone(),
                    n: 0,
                    kind: q.kind,
                    extras: Vec::new(),
                    tag_args: 0,
                };
                let mut c = Column::aggregate(
                    column_name(f),
                    Typed::new(reduce::points_sql(&q, &[]), q.kind),
                    false,
                );
                c.reducer = Some(reducer);
                valueless.push(None);
                columns.push(c);
                continue;
            }
            _ => {
                if let Some((name, args, scale)) = transform_parts(e) {
                    let inner = strip_parens(&args[0]);
                    let t = aggregate_value(scope, inner)?;
                    let count = matches!(inner, Expr::Call { name, .. } if name == "count");
                    let transform = transform_of(name, args, scale)?;
                    valueless.push(None);
                    columns
                        .push(Column::aggregate(column_name(f), t, count).transformed(transform));
                    continue;
                }
                aggregate_value(scope, e)?
            }
        };
        let count = matches!(e, Expr::Call { name, .. } if name == "count");
        valueless.push(match (e, selector) {
            (Expr::Call { name, args }, _) => null_where_valueless(scope, name, args),
            _ => None,
        });
        columns.push(Column::aggregate(column_name(f), t, count));
    }
    dedup_names(&mut columns);
    let fields: BTreeSet<String> = scope.fields.iter().cloned().collect();
    let presence = match valueless.into_iter().collect::<Option<BTreeSet<String>>>() {
        Some(read) if !columns.is_empty() && read == fields => Presence::AfterEngine,
        _ => Presence::InSql,
    };
    let point_time = match selector {
        Some((name, args)) if window.is_none() => agg::selector_time(scope, name, args)?,
        _ => match single_selector_call(stmt) {
            Some((name, args)) if window.is_none() => agg::selector_time(scope, name, args)?,
            _ => None,
        },
    };
    Ok((
        columns,
        Aggregate {
            window,
            point_time,
            fields: scope.fields.iter().cloned().collect(),
            fill: stmt.fill.clone().unwrap_or(Fill::Null),
            zone: zone(stmt)?,
            presence,
        },
    ))
}

/// The field `name(args)` aggregates, when its column is null exactly where
/// the group has no value of that field (`agg::NULL_WHERE_VALUELESS` over a
/// field of this measurement).
fn null_where_valueless(scope: &Scope<'_>, name: &str, args: &[Expr]) -> Option<String> {
    if !agg::NULL_WHERE_VALUELESS.contains(&name) || args.len() != 1 {
        return None;
    }
    match strip_parens(&args[0]) {
        Expr::VarRef { name, data_type } => match scope.lookup(name, *data_type) {
            // A cast to a type the field cannot take reads nothing (null).
            expr::Name::Field(f, t)
                if expr::cast_to(Typed::new("", expr::Kind::of(t)), *data_type).kind
                    != expr::Kind::Null =>
            {
                Some(f.to_string())
            }
            _ => None,
        },
        _ => None,
    }
}

/// `top(x, [tag, ...], n)` and the names selected with it: the reduced
/// column, then one column per tag argument and per name, taken from the
/// picked points.
pub(super) fn top_columns(
    stmt: &SelectStatement,
    scope: &mut Scope<'_>,
    name: &str,
    args: &[Expr],
) -> Result<Vec<Column>, InfluxqlError> {
    if args.len() < 2 {
        return Err(InfluxqlError::invalid(format!(
            "invalid number of arguments for {name}, expected at least 2, got {}",
            args.len()
        )));
    }
    let n = match strip_parens(&args[args.len() - 1]) {
        Expr::Literal(Literal::Integer(n)) => reduce::limit_arg(name, *n)?,
        _ => {
            return Err(InfluxqlError::invalid(format!(
                "expected integer as last argument in {name}(), found {:?}",
                args[args.len() - 1]
            )))
        }
    };
    let Some(q) = agg::field(scope, strip_parens(&args[0]))? else {
        return Ok(Vec::new());
    };
    let mut extras: Vec<Typed> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for a in &args[1..args.len() - 1] {
        let Expr::VarRef { name: tag, .. } = strip_parens(a) else {
            return Err(InfluxqlError::invalid(format!(
                "only fields or tags are allowed in {name}(), found {a:?}"
            )));
        };
        extras.push(match scope.lookup(tag, None) {
            expr::Name::Tag(k) => scope.tag(k),
            _ => Typed::new("''", expr::Kind::String),
        });
        names.push(tag.clone());
    }
    let tag_args = extras.len();
    let mut top_name = name.to_string();
    for f in &stmt.fields {
        match strip_parens(&f.expr) {
            Expr::VarRef { name: v, .. } if v.eq_ignore_ascii_case("time") => {}
            Expr::VarRef { name: v, data_type } => {
                let t = match scope.lookup(v, *data_type) {
                    expr::Name::Tag(k) => scope.tag(k),
                    _ => scope.value_ref(v, *data_type),
                };
                extras.push(t);
                names.push(column_name(f));
            }
            _ => top_name = column_name(f),
        }
    }
    let reducer = Reducer {
        function: name.to_string(),
        n,
        kind: q.kind,
        extras: extras.iter().map(|e| e.kind).collect(),
        tag_args,
    };
    let sql = reduce::points_sql(&q, &extras);
    let mut top = Column::aggregate(top_name, Typed::new(sql, q.kind), false);
    top.reducer = Some(reducer);
    let mut columns = vec![top];
    for (i, n) in names.into_iter().enumerate() {
        let mut c = Column::raw(n, "NULL".into());
        c.companion = Some(i);
        columns.push(c);
    }
    dedup_names(&mut columns);
    Ok(columns)
}

/// The call of `SELECT percentile(f, 90)`: one selected selector, alone.
pub(super) fn single_selector_call(stmt: &SelectStatement) -> Option<(&str, &[Expr])> {
    match stmt.fields.as_slice() {
        [f] => match strip_parens(&f.expr) {
            Expr::Call { name, args } if agg::is_selector(name) && on_one_field(args) => {
                Some((name.as_str(), args.as_slice()))
            }
            _ => None,
        },
        _ => None,
    }
}

/// A call over `*` or a regex: its name and the arguments of one call per
/// matching field.
type PerField<'e> = (&'e str, Vec<Vec<Expr>>);

/// `f(*)` or `f(/re/)` as the calls over each matching field.
pub(crate) fn expand_call<'e>(
    e: &'e Expr,
    schema: &MeasurementSchema,
) -> Result<Option<PerField<'e>>, InfluxqlError> {
    let Expr::Call { name, args } = e else {
        return Ok(None);
    };
    let re = match args.first().map(strip_parens) {
        Some(Expr::Wildcard(_)) => None,
        Some(Expr::Literal(Literal::Regex(r))) => Some(crate::influxql::schema::compile(&r.0)?),
        _ => return Ok(None),
    };
    let numeric_only = !matches!(
        name.as_str(),
        "count" | "first" | "last" | "mode" | "distinct" | "elapsed"
    );
    let calls = schema
        .fields
        .iter()
        .filter(|(f, t)| {
            re.as_ref().is_none_or(|re| re.is_match(f)) && (!numeric_only || agg::numeric_field(*t))
        })
        .map(|(f, _)| {
            let mut a = args.clone();
            a[0] = Expr::VarRef {
                name: f.clone(),
                data_type: None,
            };
            a
        })
        .collect();
    Ok(Some((name.as_str(), calls)))
}

/// An aggregate expression: calls, literals and arithmetic between them.
pub(super) fn aggregate_value(scope: &mut Scope<'_>, e: &Expr) -> Result<Typed, InfluxqlError> {
    match e {
        Expr::Paren(inner) => aggregate_value(scope, inner),
        Expr::Call { name, args } => agg::call(scope, name, args),
        Expr::Literal(l) => expr::literal(l),
        Expr::Binary { op, lhs, rhs } if expr::is_arithmetic(*op) => {
            let l = aggregate_value(scope, lhs)?;
            let r = aggregate_value(scope, rhs)?;
            Ok(expr::arithmetic(*op, &l, &r))
        }
        _ => Err(InfluxqlError::invalid(
            "mixing aggregate and non-aggregate queries is not supported",
        )),
    }
}

/// InfluxDB's name of a selected column: the alias, else the expression's.
pub(super) fn column_name(f: &influxql::ast::Field) -> String {
    f.name()
}

/// Repeated names get `_1`, `_2`, ... as InfluxDB numbers them.
pub(super) fn dedup_names(columns: &mut [Column]) {
    let mut seen: Vec<String> = Vec::new();
    for c in columns.iter_mut() {
        let base = c.name.clone();
        let mut name = base.clone();
        let mut n = 0;
        while seen.contains(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        seen.push(name.clone());
        c.name = name;
    }
}
