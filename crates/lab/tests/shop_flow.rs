//! deploy/shop/flow.toml, the shop's session for flows (docs/shop.md),
//! compiles with the flow library against its feeders, and its feeders'
//! expected cart totals are what the catalogue's prices make them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn shop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/shop")
}

fn csv(name: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(shop_dir().join(name)).unwrap();
    text.lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect()
}

#[test]
fn the_shop_flow_compiles_with_its_feeders() {
    let text = std::fs::read_to_string(shop_dir().join("flow.toml")).unwrap();
    let spec = benchlab_flow::FlowSpec::from_toml(&text).unwrap_or_else(|e| panic!("{}", e.render("flow.toml", &text)));
    let flow = spec.compile(&shop_dir()).unwrap_or_else(|errors| {
        let all: Vec<String> = errors.iter().map(|e| e.render("flow.toml", &text)).collect();
        panic!("{}", all.join("\n"))
    });
    let names: Vec<&str> = flow.steps().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["login_page", "login", "product", "add1", "add2", "checkout"]);
    let methods: Vec<&str> = flow.steps().iter().map(|s| s.method.as_str()).collect();
    assert_eq!(methods, ["GET", "POST", "GET", "POST", "POST", "POST"]);
    assert_eq!(flow.feeders().count(), 2);
}

#[test]
fn the_items_feeders_totals_are_the_catalogues_prices() {
    let prices: BTreeMap<String, u64> = csv("products.csv")
        .into_iter()
        .map(|r| (r[0].clone(), r[2].parse().unwrap()))
        .collect();
    let items = csv("items.csv");
    assert_eq!(items.len(), 10);
    for r in &items {
        let (q1, q2): (u64, u64) = (r[1].parse().unwrap(), r[3].parse().unwrap());
        assert_ne!(r[0], r[2], "two different products a row: {r:?}");
        assert_eq!(r[4].parse::<u64>().unwrap(), q1 + q2, "{r:?}");
        assert_eq!(
            r[5].parse::<u64>().unwrap(),
            q1 * prices[&r[0]] + q2 * prices[&r[2]],
            "{r:?}"
        );
    }
    // The sums a run of 10·k whole flows checks out, k times over.
    let units: u64 = items.iter().map(|r| r[4].parse::<u64>().unwrap()).sum();
    let cents: u64 = items.iter().map(|r| r[5].parse::<u64>().unwrap()).sum();
    assert_eq!((units, cents), (37, 71_675));
    assert_eq!(csv("users.csv").len(), 50);
}
